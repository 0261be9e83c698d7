import type { Sandbox } from '../../sandbox/types.js';

/**
 * The process ids the harness pins in every sandbox where the runtime can set them
 * (SandboxFromHost.setNextPid): its control shell starts at `control`, the agent's runner at
 * `agent`, and the episode's first process at `episode` — in a new sandbox and in one
 * restored in place alike, so an action that prints or walks process ids (`ps`, `$$`, a
 * `find /` that lists /proc) answers as in any new sandbox of the image. Without pinning,
 * a new sandbox's ids depend on how many processes its creation ran, and a restored one's
 * on what its earlier episodes ran.
 */
export const PINNED_PIDS = { control: 50, agent: 100, episode: 200 } as const;

/** Runs `start` with the sandbox's next process id set to `pid` first (where the runtime can set it). */
export async function startAtPid<T>(sandbox: Sandbox, pid: number, start: () => Promise<T>): Promise<T> {
  await sandbox.fromHost?.setNextPid(pid);
  return start();
}
