/**
 * What a container's name says under keep-warm (src/sandbox/docker/keep-warm/warm-sandboxes.ts), and
 * how long sandboxes are kept warm: `--keep-warm`, INTERCODE_KEEP_WARM, the default.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_KEEP_WARM_SECONDS, keepWarmMs } from '../../src/scheduler/keep-warm.js';
import { ConfigError } from '../../src/errors.js';
import { containerRun, parseContainerName, runName, warmName } from '../../src/sandbox/docker/keep-warm/warm-sandboxes.js';

describe('container names under keep-warm', () => {
  it('reads back what a parked and an owned name carry, with or without the leading slash', () => {
    const parked = warmName('c3deccdcc132e074', 'template', 1795668653165.4, '753288aa45864a45');
    expect(parked).toBe('intercode-warm.c3deccdcc132e074.template.1795668653165.753288aa45864a45');
    expect(parseContainerName(`/${parked}`)).toEqual({ state: 'warm', key: 'c3deccdcc132e074', role: 'template', expiresAt: 1795668653165, tag: '753288aa45864a45' });
    expect(parseContainerName(runName('0123456789abcdef', 4242))).toMatchObject({ state: 'run', pid: 4242, tag: '0123456789abcdef' });
    // A host name with dots stays whole.
    expect(parseContainerName('intercode-run.17.node-1.example.org.0123456789abcdef')).toEqual({ state: 'run', pid: 17, host: 'node-1.example.org', tag: '0123456789abcdef' });
  });

  it('calls anything else other: foreign names, unknown roles, bad numbers', () => {
    for (const name of ['/sleepy_turing', 'intercode-warm.k.pool.1.t', 'intercode-warm.k.workspace.soon.t', 'intercode-warm.k.workspace.1', 'intercode-run.x.h.t', 'intercode-run.0.h.t', 'intercode-run.5.t']) {
      expect(parseContainerName(name)).toEqual({ state: 'other' });
    }
  });

  it('an owned name wins over the stale run label; a parked one belongs to no run; others go by their label', () => {
    const labels = { 'io.intercode-ts.run': '100@builder' };
    expect(containerRun({ Names: [`/${runName('0123456789abcdef', 200)}`], Labels: labels })).toMatchObject({ pid: 200 });
    expect(containerRun({ Names: [`/${warmName('k', 'workspace', 1, 't')}`], Labels: labels })).toBeUndefined();
    expect(containerRun({ Names: ['/other'], Labels: labels })).toEqual({ pid: 100, host: 'builder' });
  });
});

describe('how long sandboxes are kept warm', () => {
  it('takes the flag over the variable over the default, in seconds; 0 turns it off', () => {
    expect(keepWarmMs(undefined, {})).toBe(DEFAULT_KEEP_WARM_SECONDS * 1000);
    expect(keepWarmMs(undefined, { INTERCODE_KEEP_WARM: '0' })).toBe(0);
    expect(keepWarmMs('2.5', { INTERCODE_KEEP_WARM: '0' })).toBe(2500);
    expect(keepWarmMs('0', {})).toBe(0);
  });

  it('refuses what is not a number of seconds from 0 to a day, naming where it came from', () => {
    for (const bad of ['-1', 'soon', '', ' ', '86401', 'Infinity']) {
      expect(() => keepWarmMs(bad, {})).toThrow(ConfigError);
      expect(() => keepWarmMs(bad, {})).toThrow(/--keep-warm/);
    }
    expect(() => keepWarmMs(undefined, { INTERCODE_KEEP_WARM: 'x' })).toThrow(/INTERCODE_KEEP_WARM must be a number of seconds/);
  });
});
