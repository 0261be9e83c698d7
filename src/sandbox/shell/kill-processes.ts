import { SandboxError } from '../../errors.js';
import type { Sandbox } from '../types.js';
import { KILL_SCRIPT } from './shell-script.js';

/**
 * What a harness command that prints little may print before it is cut off: the programs it
 * runs are the sandbox's, which an agent may have replaced with one that prints without end.
 */
export const HARNESS_EXEC_OUTPUT_BYTES = 64 * 1024;

/** The kill under way in each sandbox, by sandbox id (a wrapper and the sandbox it wraps share one). */
const underWay = new Map<string, Promise<unknown>>();

/**
 * Kills every process in `sandbox` but init, the idle process and `spare` ({@link KILL_SCRIPT},
 * one exec), once any kill already under way there has ended: two at once would stop and
 * kill each other's scripts (seen: the disk guard's kill and a command's interrupt under
 * gVisor, the session then restarting the whole sandbox).
 * @returns whether the script ran to its end (false: it timed out, or the sandbox is lost).
 * @throws what the exec throws other than SANDBOX_LOST.
 */
export async function killProcesses(sandbox: Sandbox, spare: readonly number[] = []): Promise<boolean> {
  const before = underWay.get(sandbox.id) ?? Promise.resolve();
  const kill = before.catch(() => undefined).then(() => sandbox.exec(['bash', '-c', KILL_SCRIPT, 'kill', ...spare.map(String)], { timeoutMs: 5_000, maxOutputBytes: HARNESS_EXEC_OUTPUT_BYTES }));
  underWay.set(sandbox.id, kill);
  try {
    return (await kill).exitCode === 0;
  } catch (error) {
    if (error instanceof SandboxError && error.code === 'SANDBOX_LOST') return false;
    throw error;
  } finally {
    if (underWay.get(sandbox.id) === kill) underWay.delete(sandbox.id);
  }
}
