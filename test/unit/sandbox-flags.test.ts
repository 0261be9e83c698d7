import { afterEach, describe, expect, it } from 'vitest';
import { parseStepOptions } from '../../src/bench/step-options.js';
import { parseVecOptions } from '../../src/bench/vec-options.js';
import { applySandboxFlags } from '../../src/cli/engine-flag.js';
import { ConfigError } from '../../src/errors.js';
import { defaultCleanMode } from '../../src/vec/make-vec-env.js';

const saved = { runtime: process.env.INTERCODE_RUNTIME, disk: process.env.INTERCODE_DISK_LIMIT_MIB };
afterEach(() => {
  for (const [key, value] of [['INTERCODE_RUNTIME', saved.runtime], ['INTERCODE_DISK_LIMIT_MIB', saved.disk]] as const) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
});

describe('--runtime and --disk-limit', () => {
  it('reach every DockerRuntime through INTERCODE_RUNTIME and INTERCODE_DISK_LIMIT_MIB', () => {
    applySandboxFlags({ runtime: 'runsc', diskLimit: '512' });
    expect(process.env.INTERCODE_RUNTIME).toBe('runsc');
    expect(process.env.INTERCODE_DISK_LIMIT_MIB).toBe('512');
  });
  it.each([
    [{ runtime: 'runsc --network=host' }, '--runtime'],
    [{ runtime: '' }, '--runtime'],
    [{ diskLimit: '0' }, '--disk-limit'],
    [{ diskLimit: '1.5' }, '--disk-limit'],
    [{ diskLimit: 'lots' }, '--disk-limit'],
  ])('%j is refused naming %s', (flags, flag) => {
    expect(() => applySandboxFlags(flags)).toThrow(ConfigError);
    expect(() => applySandboxFlags(flags)).toThrow(flag);
  });
  it('pooled envs restore in place under runc and replace sandboxes under another runtime', () => {
    delete process.env.INTERCODE_RUNTIME;
    expect(defaultCleanMode()).toBe('restore');
    process.env.INTERCODE_RUNTIME = 'runc';
    expect(defaultCleanMode()).toBe('restore');
    process.env.INTERCODE_RUNTIME = 'runsc';
    expect(defaultCleanMode()).toBe('replace');
  });
});

describe('bench runtime options', () => {
  it('step: --runtime and --compare-runtimes', () => {
    expect(parseStepOptions(['--runtime', 'runsc', '--compare-runtimes', 'runc, runsc'])).toMatchObject({ runtime: 'runsc', compareRuntimes: ['runc', 'runsc'] });
    expect(() => parseStepOptions(['--compare-runtimes', 'runc,;rm'])).toThrow('--compare-runtimes');
  });
  it('vec: --runtimes', () => {
    expect(parseVecOptions(['--runtimes', 'runc,runsc'])).toMatchObject({ runtimes: ['runc', 'runsc'] });
    expect(() => parseVecOptions(['--runtimes', ''])).toThrow('--runtimes');
  });
});
