import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';

/**
 * The host process id of a container's first process, when this process can set the next
 * process id of the container's PID namespace from the host ({@link setNextPidFromHost}):
 * run as root, and the engine local with a runtime whose container processes are host
 * processes (runc: the host's `/proc/<pid>/cmdline` is the container's own command; under
 * gVisor it is the sandbox's kernel, whose process ids are its own), or the engine's init
 * (`docker-init`) where the container has one. Undefined otherwise.
 * @param info the engine's inspection of the running container (`State.Pid`, `Path`, `HostConfig.Init`).
 */
export function hostInitPid(info: { State?: { Pid?: number }; Path?: string; HostConfig?: { Init?: boolean | null } } | undefined): number | undefined {
  const pid = info?.State?.Pid;
  if (process.getuid?.() !== 0 || !pid || pid <= 0 || !info?.Path) return undefined;
  try {
    const argv0 = readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0')[0];
    return argv0 === info.Path || (info.HostConfig?.Init === true && argv0?.endsWith('/docker-init')) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Makes the next process started in the PID namespace of host process `initPid` get `next`
 * (or the first free id above it): writes `next - 1` to that namespace's
 * `/proc/sys/kernel/ns_last_pid` from a process that `nsenter` puts into the namespace (the
 * file belongs to the writer's PID namespace; writing it needs a capability the sandbox's
 * own processes lack). That process takes an id of the namespace before it writes, so what
 * it leaves is exactly `next - 1`. One host process (about 5 ms).
 * @returns whether it was written.
 */
export function setNextPidFromHost(initPid: number, next: number): Promise<boolean> {
  if (!Number.isInteger(next) || next < 2) return Promise.resolve(false);
  return new Promise((resolve) => {
    execFile('nsenter', ['-t', String(initPid), '-p', '--', '/bin/sh', '-c', 'echo "$0" > /proc/sys/kernel/ns_last_pid', String(next - 1)], { timeout: 10_000 }, (error) => resolve(!error));
  });
}
