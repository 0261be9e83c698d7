import { describe, expect, it } from 'vitest';
import { parseStepOptions } from '../../bench/step-options.js';
import { parseVecOptions } from '../../bench/vec-options.js';
import { sandboxSettings } from '../../src/cli/engine-flag.js';
import { ConfigError } from '../../src/errors.js';
import { defaultCleanMode } from '../../src/vec/make-vec-env.js';

const NO_VARIABLES = { INTERCODE_RUNTIME: undefined, INTERCODE_DISK_LIMIT_MIB: undefined };

describe('--runtime, --disk-limit and --sandbox-kind', () => {
  it('become the SandboxSettings every runtime of the command is given; the kind is auto unless one is named', () => {
    expect(sandboxSettings({ runtime: 'runsc', diskLimit: '512' }, NO_VARIABLES)).toEqual({ ociRuntime: 'runsc', diskLimitBytes: 512 * 2 ** 20, kind: 'auto' });
    expect(sandboxSettings({}, NO_VARIABLES)).toEqual({ kind: 'auto' });
    expect(sandboxSettings({ sandboxKind: 'containers' }, NO_VARIABLES)).toEqual({ kind: 'containers' });
  });
  it('default to INTERCODE_RUNTIME, INTERCODE_DISK_LIMIT_MIB and INTERCODE_SANDBOX_KIND, read at the CLI; a flag wins', () => {
    const env = { INTERCODE_RUNTIME: 'runsc', INTERCODE_DISK_LIMIT_MIB: '64', INTERCODE_SANDBOX_KIND: 'containers' };
    expect(sandboxSettings({}, env)).toEqual({ ociRuntime: 'runsc', diskLimitBytes: 64 * 2 ** 20, kind: 'containers' });
    expect(sandboxSettings({ runtime: 'runc', diskLimit: '128', sandboxKind: 'episode-roots' }, env)).toEqual({ ociRuntime: 'runc', diskLimitBytes: 128 * 2 ** 20, kind: 'episode-roots' });
    expect(sandboxSettings({}, { INTERCODE_RUNTIME: '', INTERCODE_DISK_LIMIT_MIB: '', INTERCODE_SANDBOX_KIND: '' })).toEqual({ kind: 'auto' });
  });
  it.each([
    [{ runtime: 'runsc --network=host' }, '--runtime'],
    [{ runtime: '' }, '--runtime'],
    [{ diskLimit: '0' }, '--disk-limit'],
    [{ diskLimit: '1.5' }, '--disk-limit'],
    [{ diskLimit: 'lots' }, '--disk-limit'],
    [{ sandboxKind: 'vm' }, '--sandbox-kind'],
  ])('%j is refused naming %s', (flags, flag) => {
    expect(() => sandboxSettings(flags, NO_VARIABLES)).toThrow(ConfigError);
    expect(() => sandboxSettings(flags, NO_VARIABLES)).toThrow(flag);
  });
  it('a bad variable is refused naming it', () => {
    expect(() => sandboxSettings({}, { INTERCODE_RUNTIME: undefined, INTERCODE_DISK_LIMIT_MIB: 'lots' })).toThrow('INTERCODE_DISK_LIMIT_MIB');
    expect(() => sandboxSettings({}, { INTERCODE_RUNTIME: 'a b', INTERCODE_DISK_LIMIT_MIB: undefined })).toThrow('INTERCODE_RUNTIME');
    expect(() => sandboxSettings({}, { INTERCODE_SANDBOX_KIND: 'root' })).toThrow('INTERCODE_SANDBOX_KIND');
  });
  it('pooled envs restore in place under runc and replace sandboxes under another runtime', () => {
    expect(defaultCleanMode(undefined)).toBe('restore');
    expect(defaultCleanMode('runc')).toBe('restore');
    expect(defaultCleanMode('runsc')).toBe('replace');
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
