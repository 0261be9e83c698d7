/**
 * A pod's run label (`pid.host`) names the process that made it, so that a later process on
 * the same host can reap the pods of one that died. It must be a valid label value (at most
 * 63 characters of [A-Za-z0-9._-]) and read back as the same pid on the same host, however
 * long the host name and the pid.
 */
import { describe, expect, it } from 'vitest';
import { pidOnThisHost, podRunLabelValue } from '../../src/sandbox/kubernetes/pod-spec.js';

const LABEL = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;
const PIDS = [1, 4242, 4_194_304];

describe('pod run labels', () => {
  const hosts = {
    short: 'vm',
    long: `build-runner-${'x'.repeat(40)}.eu-west-1.compute.internal`,
    unsafe: 'host_with@odd:chars',
  };

  for (const [kind, host] of Object.entries(hosts)) {
    it(`${kind} host name: a valid label that reads back as the same pid, on this host only`, () => {
      for (const pid of PIDS) {
        const label = podRunLabelValue(pid, host);
        expect(label).toMatch(LABEL);
        expect(pidOnThisHost(label, host)).toBe(pid);
        expect(pidOnThisHost(label, `${host}2`)).toBeUndefined();
      }
    });
  }

  it('a short, label-safe host name is kept as it is', () => {
    expect(podRunLabelValue(4242, 'vm')).toBe('4242.vm');
  });

  it('two long host names that share their first 50 characters get different labels', () => {
    const a = `${'a'.repeat(60)}-one`;
    const b = `${'a'.repeat(60)}-two`;
    expect(podRunLabelValue(1, a)).not.toBe(podRunLabelValue(1, b));
    expect(pidOnThisHost(podRunLabelValue(1, a), b)).toBeUndefined();
  });

  it('no label, or one without a pid, is no pid', () => {
    expect(pidOnThisHost(undefined, 'vm')).toBeUndefined();
    expect(pidOnThisHost('vm', 'vm')).toBeUndefined();
    expect(pidOnThisHost('x.vm', 'vm')).toBeUndefined();
  });
});
