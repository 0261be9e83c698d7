import { readFileSync } from 'node:fs';
import { hostCommands } from '../host-commands.js';

/** A process's argument list as the host's `/proc` shows it; undefined once it has gone. */
export type ArgvReader = (pid: number) => readonly string[] | undefined;

const hostArgv: ArgvReader = (pid) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0');
  } catch {
    return undefined;
  }
};

/** How long a container's first process may still be the runtime's init (or between programs) before its command replaces it. */
const RUNTIME_INIT_WAIT_MS = 15_000;

/**
 * The host process id of a container's first process, when this process can set the next
 * process id of the container's PID namespace from the host ({@link setNextPidFromHost}):
 * run as root, and the engine local with a runtime whose container processes are host
 * processes (runc: the host's `/proc/<pid>/cmdline` is the container's own command; under
 * gVisor it is the sandbox's kernel, whose process ids are its own), or the engine's init
 * (`docker-init`) where the container has one. Undefined otherwise.
 *
 * Just after a start the process can still be runc's own init (`runc init`), which replaces
 * itself with the container's command a moment later (longer on a loaded host), and while it
 * does its command line reads empty: both are waited for, up to 15 s, rather than taken for a
 * runtime whose processes are not the host's (the sandbox would never be pinned).
 * @param info the engine's inspection of the running container (`State.Pid`, `Path`, `HostConfig.Init`).
 */
export async function hostInitPid(
  info: { State?: { Pid?: number }; Path?: string; HostConfig?: { Init?: boolean | null } } | undefined,
  readArgv: ArgvReader = hostArgv,
): Promise<number | undefined> {
  const pid = info?.State?.Pid;
  if (process.getuid?.() !== 0 || !pid || pid <= 0 || !info?.Path) return undefined;
  const deadline = Date.now() + RUNTIME_INIT_WAIT_MS;
  for (;;) {
    const argv = readArgv(pid);
    if (!argv) return undefined;
    if (argv[0] === info.Path || (info.HostConfig?.Init === true && argv[0]?.endsWith('/docker-init'))) return pid;
    // An empty command line is a process between two programs (read during its exec): wait too.
    const runtimeInit = (argv[1] === 'init' && /(^|\/)runc$/.test(argv[0] ?? '')) || !argv[0];
    if (!runtimeInit || Date.now() >= deadline) return undefined;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Makes the next process started in the PID namespace of host process `initPid` get `next`
 * (or the first free id above it): writes `next - 1` to that namespace's
 * `/proc/sys/kernel/ns_last_pid` from a process that `nsenter` puts into the namespace (the
 * file belongs to the writer's PID namespace; writing it needs a capability the sandbox's
 * own processes lack). That process takes an id of the namespace before it writes, so what
 * it leaves is exactly `next - 1`. Run through the host command helper (see HostCommands);
 * once more where the first try failed.
 * @returns whether it was written.
 */
export async function setNextPidFromHost(initPid: number, next: number): Promise<boolean> {
  if (!Number.isInteger(next) || next < 2) return false;
  const write = async () =>
    (await hostCommands.run(['nsenter', '-t', String(initPid), '-p', '--', '/bin/sh', '-c', 'echo "$0" > /proc/sys/kernel/ns_last_pid', String(next - 1)])).status === 0;
  // Once more where the first was cut by its time limit on a loaded host.
  return (await write()) || write();
}
