/**
 * hostInitPid: the host id of a container's first process, read from the host's /proc.
 * Just after a start that process can still be runc's own init (`runc init`), which
 * execs the container's command a moment later: taken then for "not this runtime's kind",
 * the sandbox was never given its pinned process ids (a CI run on a loaded host showed a
 * new sandbox with the unpinned ids 14/20 beside one with 50/100). It is waited for now.
 */
import { describe, expect, it } from 'vitest';
import { hostInitPid } from '../../src/sandbox/docker/reuse/next-pid.js';

const info = { State: { Pid: 4242 }, Path: '/opt/intercode/idle', HostConfig: { Init: false } };
const asRoot = process.getuid?.() === 0;

describe.skipIf(!asRoot)('hostInitPid (run as root, as the harness pins ids only then)', () => {
  it('waits while its command line reads empty (a process read during its exec), then gives its id', async () => {
    const seen = [['runc', 'init', ''], [''], ['/opt/intercode/idle', '']];
    let reads = 0;
    expect(await hostInitPid(info, () => seen[Math.min(reads++, seen.length - 1)])).toBe(4242);
    expect(reads).toBe(3);
  });

  it('waits while the first process is still runc init, then gives its id', async () => {
    const seen = [['runc', 'init', ''], ['/usr/sbin/runc', 'init', ''], ['/opt/intercode/idle', '']];
    let reads = 0;
    expect(await hostInitPid(info, () => seen[Math.min(reads++, seen.length - 1)])).toBe(4242);
    expect(reads).toBe(3);
  });

  it('the engine init (docker-init) counts as the container own', async () => {
    expect(await hostInitPid({ ...info, HostConfig: { Init: true } }, () => ['/sbin/docker-init', '--', 'idle'])).toBe(4242);
  });

  it('another command (a runtime whose processes are not the host ones, gVisor) gives none at once', async () => {
    let reads = 0;
    expect(await hostInitPid(info, () => (reads++, ['runsc-sandbox', '--root=/var/run']))).toBeUndefined();
    expect(reads).toBe(1);
  });

  it('a process that has gone, or no process id, gives none', async () => {
    expect(await hostInitPid(info, () => undefined)).toBeUndefined();
    expect(await hostInitPid({ ...info, State: { Pid: 0 } }, () => ['/opt/intercode/idle'])).toBeUndefined();
  });
});
