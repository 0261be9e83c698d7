/**
 * How the fork tests compare a parent episode with its children: the observer set of the
 * restore-equivalence test (see restore-observer.ts) run through the engine in an env's
 * sandbox, with what a copy cannot keep cut (docs/fork.md).
 */
import type { SandboxEnv } from '../../src/env/sandbox-env.js';
import type { WorkspaceLease } from '../../src/pool/workspace-lease.js';
import { OBSERVER, PER_SANDBOX, wellFormed, withoutPerSandboxFields } from './restore-observer.js';

/** The workspace an env's episode runs in (for the observers, which run through the engine, not the agent's shell). */
export const workspaceOf = (env: SandboxEnv) => (env as unknown as { lease: WorkspaceLease }).lease.held!.workspace;

/** The observers' output in `env`'s sandbox; throws when it is not a sandbox's (see {@link wellFormed}). */
export async function observeEnv(env: SandboxEnv): Promise<string> {
  const result = await workspaceOf(env).sandbox.exec(['bash', '-c', OBSERVER], { timeoutMs: 300_000 });
  return wellFormed(result.output.toString(), result.exitCode);
}

/**
 * Observer lines with `find`'s atime, ctime and inode fields cut (a copy's paths are new
 * inodes with a new ctime, so relatime moves their atime on the first read where the
 * parent's, read since its last change, stays: docs/fork.md); those of per-sandbox paths
 * keep only what two new sandboxes share there (type, size, blocks, mode, owner).
 */
export function comparable(observed: string): string[] {
  return observed
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      if (PER_SANDBOX.has(line.split('\t')[1] ?? '')) return withoutPerSandboxFields(line);
      if (!line.startsWith('find\t')) return line;
      const fields = line.split(' ');
      return [...fields.slice(0, -4), fields.at(-3)].join(' ');
    });
}

/** The lines only in `a` (-) or only in `b` (+); empty when the two observations agree. */
export function differences(a: readonly string[], b: readonly string[]): string[] {
  const count = new Map<string, number>();
  for (const line of a) count.set(line, (count.get(line) ?? 0) + 1);
  for (const line of b) count.set(line, (count.get(line) ?? 0) - 1);
  return [...count].filter(([, n]) => n !== 0).map(([line, n]) => `${n > 0 ? '-' : '+'} ${line}`).sort((x, y) => x.slice(2).localeCompare(y.slice(2)));
}

/** The one change the negative control makes: a file every image has, its mtime only (same size, same contents). */
export const CONTROL_CHANGE = { path: '/etc/passwd', command: ['touch', '-m', '-d', '@1000000000', '/etc/passwd'] } as const;

/**
 * The negative control of a fork comparison: `child` (one that answered as its parent) gets
 * one file's mtime changed through the engine; the comparison with `parentSeen` must then
 * flag that file. Returns the differences it saw (empty: the comparison is blind, and the
 * caller's test fails).
 */
export async function differencesAfterControlChange(parentSeen: readonly string[], child: SandboxEnv): Promise<string[]> {
  const changed = await workspaceOf(child).sandbox.exec([...CONTROL_CHANGE.command], { timeoutMs: 30_000 });
  if (changed.exitCode !== 0) throw new Error(`the control change failed (exit code ${changed.exitCode}): ${changed.output.toString()}`);
  return differences(parentSeen, comparable(await observeEnv(child)));
}
