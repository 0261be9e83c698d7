/**
 * How the fork tests compare a parent episode with its children: the observer set of the
 * restore-equivalence test (see restore-observer.ts) run through the engine in an env's
 * sandbox, with what a copy cannot keep cut (docs/fork.md).
 */
import type { SandboxEnv } from '../../src/env/sandbox-env.js';
import type { Workspace } from '../../src/pool/types.js';
import { OBSERVER, PER_SANDBOX, withoutPerSandboxFields } from './restore-observer.js';

/** The workspace an env's episode runs in (for the observers, which run through the engine, not the agent's shell). */
export const workspaceOf = (env: SandboxEnv) => (env as unknown as { workspace: Workspace }).workspace;

/** The observers' output in `env`'s sandbox. */
export async function observeEnv(env: SandboxEnv): Promise<string> {
  const result = await workspaceOf(env).sandbox.exec(['bash', '-c', OBSERVER], { timeoutMs: 300_000 });
  return result.output.toString();
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
