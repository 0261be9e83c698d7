/**
 * The capability that sets the harness's processes in a sandbox apart from the agent's.
 *
 * Every process of a sandbox runs as root with the same uid, and this kernel has no Yama:
 * by uid alone, an agent's process could ptrace the harness's control shell, open its
 * `/proc/<pid>/mem`, `/proc/<pid>/fd/*` (its command pipe, its stdout) and `environ`. Linux
 * refuses each of these (`__ptrace_may_access` → `cap_ptrace_access_check`) to a process
 * whose capabilities do not include all of the target's permitted ones, unless it has
 * CAP_SYS_PTRACE (no sandbox does). So the sandbox's processes hold one capability more than
 * the spec asks for, and every process that runs an agent's commands is started without it
 * ({@link confined}): the agent's own capabilities are exactly the spec's, as before, and
 * no process of its can reach one of the harness's (the control shell and what it starts,
 * the idle process, init, the engine's execs). Signals are not covered: `kill` needs only
 * the same uid.
 *
 * Why CAP_SETPCAP: it is in Docker's default set and Kubernetes' baseline Pod Security
 * profile, and in a sandbox it gives nothing a process could not have anyway: it lets a
 * process drop capabilities from its bounding set, set securebits, and raise inheritable
 * capabilities only within its bounding set (the spec's). And the launch needs it: dropping
 * a capability from the bounding set takes CAP_SETPCAP.
 */
export const HARNESS_CAPABILITY = 'SETPCAP';

/**
 * `argv` started without {@link HARNESS_CAPABILITY}: util-linux's `setpriv` (in every image
 * here) drops it from the bounding and inheritable sets, then execs `argv`; as root, the
 * exec's permitted and effective sets are then the bounding set's (and `no-new-privileges`
 * keeps any later exec from gaining it back).
 */
export function confined(argv: readonly string[]): string[] {
  const cap = `-${HARNESS_CAPABILITY.toLowerCase()}`;
  return ['/usr/bin/setpriv', `--inh-caps=${cap}`, `--bounding-set=${cap}`, '--', ...argv];
}
