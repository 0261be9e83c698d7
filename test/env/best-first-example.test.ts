/**
 * docs/fork.md's best-first search example, run as written: the test takes the ```ts block
 * under "Best-first search with the env's reward" from the page (its import of the package
 * pointed at the source), and searches the embedded SQLite env's task 0 with it (no Docker).
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createSqlEnvs } from '../../envs/sql/index.js';
import type { TaskEnv } from '../../src/env/index.js';
import { packagePath } from '../../src/package-path.js';

type BestFirst = (root: TaskEnv, actions: readonly string[], budget: number) => Promise<{ path: string[]; reward: number; expanded: number }>;

const DIR = join(packagePath('test', 'env'), `.example-${process.pid}`);
afterAll(() => rmSync(DIR, { recursive: true, force: true }));

async function exampleFromDocs(): Promise<BestFirst> {
  const page = readFileSync(packagePath('docs', 'fork.md'), 'utf8');
  const section = page.split("## Best-first search with the env's reward")[1];
  const block = section?.match(/^```ts\n([\s\S]*?)^```$/m)?.[1];
  if (!block) throw new Error("docs/fork.md has no ```ts block under its best-first section");
  mkdirSync(DIR, { recursive: true });
  const file = join(DIR, 'best-first.ts');
  writeFileSync(file, block.replace("from 'intercode-ts/env'", `from '${packagePath('src', 'env', 'index.js')}'`));
  return ((await import(file)) as { bestFirst: BestFirst }).bestFirst;
}

describe("docs/fork.md's best-first search", () => {
  it('finds the query that scores 1 among the candidates, leaves the root episode as it was, and its path replays to the same reward', async () => {
    const bestFirst = await exampleFromDocs();
    const [root, fresh] = await createSqlEnvs({ embedded: true }, 2);
    try {
      await root!.reset({ task: 0 });
      const gold = String(root!.tasks[0]!.gold);
      const wrong = ['SELECT 1', 'SELECT count(*) FROM book', 'SELECT title FROM book LIMIT 1'];
      const before = await root!.peekScore();
      expect(before.reward).toBeLessThan(1);

      const found = await bestFirst(root!, [...wrong, gold], 3);
      expect(found).toEqual({ path: [gold], reward: 1, expanded: 1 });
      // The search forked; the root episode took no step (its gold is cached by now: that detail aside).
      const after = await root!.peekScore();
      expect([after.reward, after.parts, after.details['agent_obs']]).toEqual([before.reward, before.parts, before.details['agent_obs']]);

      await fresh!.reset({ task: 0 });
      for (const action of found.path) await fresh!.step(action);
      expect((await fresh!.step('submit')).reward).toBe(found.reward);
    } finally {
      await Promise.all([root, fresh].map((env) => env?.close()));
    }
  });

  it('with no candidate that solves, it spends its budget and returns the best it saw', async () => {
    const bestFirst = await exampleFromDocs();
    const [root] = await createSqlEnvs({ embedded: true }, 1);
    try {
      await root!.reset({ task: 0 });
      const found = await bestFirst(root!, ['SELECT 1', 'SELECT 2'], 2);
      expect(found.expanded).toBe(2);
      expect(found.reward).toBeLessThan(1);
    } finally {
      await root?.close();
    }
  });
});
