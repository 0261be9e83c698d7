import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { pythonCli } from '../../envs/python/cli.js';
import { ConfigError } from '../../src/errors.js';
import { EngineSet } from '../../src/sandbox/multi/engine-set.js';

describe('python CLI flags', () => {
  it('offers --after-score and names it among its flags (so eval records it in run.json)', () => {
    const command = new Command();
    pythonCli.addFlags(command);
    command.parse(['--after-score', 'gold-state', '--entry', 'first-def'], { from: 'user' });
    expect(command.opts()).toMatchObject({ afterScore: 'gold-state', entry: 'first-def' });
    expect(pythonCli.flagNames).toContain('afterScore');
  });

  it('refuses an unknown --after-score mode before building anything', async () => {
    const made = pythonCli.createEnvs({ afterScore: 'fresh' }, 1, { purpose: 'eval', log: () => undefined, engines: EngineSet.local() });
    await expect(made).rejects.toThrow(ConfigError);
    await expect(made).rejects.toThrow(/--after-score.*keep or gold-state, got "fresh"/);
  });
});
