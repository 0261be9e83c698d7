/**
 * Kills in one sandbox run one at a time: the disk guard's and a command's own interrupt,
 * started together, would otherwise stop and kill each other's scripts.
 */
import { describe, expect, it } from 'vitest';
import { SandboxError } from '../../src/errors.js';
import { killProcesses } from '../../src/sandbox/shell/kill-processes.js';
import type { Sandbox } from '../../src/sandbox/types.js';

/** A sandbox whose exec takes 20 ms and records how many ran at once. */
function recordingSandbox(id: string, outcome: () => number | Error = () => 0) {
  const seen = { running: 0, most: 0, calls: [] as string[][] };
  const sandbox = {
    id,
    async exec(argv: string[]) {
      seen.calls.push(argv);
      seen.running++;
      seen.most = Math.max(seen.most, seen.running);
      await new Promise((resolve) => setTimeout(resolve, 20));
      seen.running--;
      const result = outcome();
      if (result instanceof Error) throw result;
      return { exitCode: result, output: Buffer.alloc(0), timedOut: false, durationMs: 20 };
    },
  } as unknown as Sandbox;
  return { sandbox, seen };
}

describe('killProcesses', () => {
  it('runs the kills of one sandbox one after another, and those of different sandboxes at once', async () => {
    const a = recordingSandbox('a');
    const b = recordingSandbox('b');
    const done = await Promise.all([killProcesses(a.sandbox), killProcesses(a.sandbox, [7]), killProcesses(b.sandbox), killProcesses(a.sandbox)]);
    expect(done).toEqual([true, true, true, true]);
    expect(a.seen.most).toBe(1);
    expect(a.seen.calls).toHaveLength(3);
    expect(a.seen.calls[1]!.slice(-2)).toEqual(['kill', '7']);
    expect(b.seen.calls).toHaveLength(1);
  });

  it('a failed or lost kill does not stop the next one; a lost sandbox is false, other errors are thrown', async () => {
    let n = 0;
    const { sandbox, seen } = recordingSandbox('c', () => [new SandboxError('SANDBOX_LOST', 'gone'), 1, new Error('bug'), 0][n++]!);
    const results = await Promise.allSettled([killProcesses(sandbox), killProcesses(sandbox), killProcesses(sandbox), killProcesses(sandbox)]);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual([false, false, 'bug', true]);
    expect(seen.most).toBe(1);
  });
});
