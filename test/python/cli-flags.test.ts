import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { pythonPlugin } from '../../envs/python/plugin.js';
import { addEnvFlags, envFlagNames } from '../../src/cli/env-cli.js';
import { ConfigError } from '../../src/errors.js';
import { EngineSet } from '../../src/sandbox/backends/engine-set.js';

describe('python CLI flags', () => {
  it('offers --after-score and names it among its flags (so eval records it in run.json)', () => {
    const command = new Command();
    addEnvFlags(command, [pythonPlugin]);
    command.parse(['--after-score', 'gold-state', '--entry', 'first-def'], { from: 'user' });
    expect(command.opts()).toMatchObject({ afterScore: 'gold-state', entry: 'first-def' });
    expect(envFlagNames(pythonPlugin)).toContain('afterScore');
  });

  it('refuses an unknown --after-score mode before building anything', async () => {
    const made = pythonPlugin.createEnvs({ afterScore: 'fresh' }, 1, { purpose: 'eval', log: () => undefined, engines: EngineSet.local() });
    await expect(made).rejects.toThrow(ConfigError);
    await expect(made).rejects.toThrow(/--after-score.*keep or gold-state, got "fresh"/);
  });
});
