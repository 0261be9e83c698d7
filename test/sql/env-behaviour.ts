/**
 * Behaviour every SQL backend must show, run against the embedded SQLite backend
 * (embedded.test.ts) and the MariaDB server (server.test.ts).
 */
import { expect, it } from 'vitest';
import type { Task } from '../../src/datasets/index.js';
import { DatabaseNotFoundError, type SqlEnv, type SqlEnvOptions } from '../../envs/sql/index.js';

export type MakeEnvs = (options: Partial<SqlEnvOptions>, count: number) => Promise<SqlEnv[]>;

const task = (query: string, gold: string, db = 'library'): Task => ({ index: 0, id: 'adhoc', query, gold, metadata: { db } });

/** A query that never ends on its own (it is stopped by the time limit). */
export interface Dialect {
  neverEnding: string;
  /** Words in the error a write gets in read-only mode. */
  readOnlyError: RegExp;
}

export function sqlEnvBehaviour(makeEnvs: MakeEnvs, dialect: Dialect): void {
  it('every built-in gold query scores 1.0', async () => {
    const [env] = await makeEnvs({}, 1);
    try {
      expect(env!.tasks.length).toBeGreaterThanOrEqual(30);
      const hardness = new Set(env!.tasks.map((t) => t.metadata.hardness));
      expect([...hardness].sort()).toEqual(['easy', 'extra', 'hard', 'medium']);
      for (const t of env!.tasks) {
        await env!.reset({ task: t.index });
        const step = await env!.step(t.gold as string);
        expect(step.info.actionExecuted, `${t.index}: ${step.observation}`).toBe(true);
        const end = await env!.step('submit');
        expect(end.reward, `task ${t.index}: ${t.gold}`).toBe(1);
      }
    } finally {
      await env!.close();
    }
  });

  it('a syntax error is an observation, and scores 0', async () => {
    const [env] = await makeEnvs({}, 1);
    try {
      await env!.reset({ task: 0 });
      const step = await env!.step('SELEC count(*) FROM book');
      expect(step.observation).toMatch(/^Error executing query: .*syntax/i);
      expect(step.info.actionExecuted).toBe(false);
      expect((await env!.step('submit')).reward).toBe(0);
    } finally {
      await env!.close();
    }
  });

  it('a query that never ends is stopped at the time limit and reported; the session goes on', async () => {
    const [env] = await makeEnvs({ timeoutMs: 1500 }, 1);
    try {
      await env!.reset({ task: 0 });
      const started = Date.now();
      const step = await env!.step(dialect.neverEnding);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(step.observation).toMatch(/^Error executing query: .*interrupted.*time limit of 1.5 s/i);
      expect(step.info.events).toEqual([{ kind: 'timed-out', afterMs: 1500 }]);
      expect((await env!.step('SELECT count(*) FROM book')).observation).toBe('[(15,)]');
    } finally {
      await env!.close();
    }
  });

  it('a huge result set is capped with a visible note', async () => {
    const [env] = await makeEnvs({ maxRows: 1000 }, 1);
    try {
      await env!.reset({ task: 0 });
      // 15^5 = 759,375 rows
      const step = await env!.step('SELECT a.book_id FROM book a, book b, book c, book d, book e');
      const result = step.info.result!;
      expect(result.kind).toBe('rows');
      if (result.kind !== 'rows') return;
      expect(result.rows.length).toBe(1000);
      expect(result.truncated).toBe('rows');
      expect(step.observation).toMatch(/only the first 1000 rows are shown/);
      expect((await env!.step('SELECT count(*) FROM book')).observation).toBe('[(15,)]');
    } finally {
      await env!.close();
    }
  });

  it('writes fail in read-only mode and change nothing', async () => {
    const [env] = await makeEnvs({}, 1);
    try {
      await env!.reset({ task: 0 });
      for (const write of ['DELETE FROM book', 'UPDATE member SET age = 0', 'DROP TABLE loan', "INSERT INTO branch VALUES (9, 'x', 'y', 2000)"]) {
        const step = await env!.step(write);
        expect(step.observation, write).toMatch(/^Error executing query: /);
        expect(step.observation, write).toMatch(dialect.readOnlyError);
      }
      expect((await env!.step('SELECT count(*) FROM book')).observation).toBe('[(15,)]');
      expect((await env!.step('SELECT count(*) FROM loan')).observation).toBe('[(22,)]');
    } finally {
      await env!.close();
    }
  });

  it('writable mode: one episode drops, deletes and updates while others read; nothing leaks, and reset restores it', async () => {
    const readers = await makeEnvs({}, 3);
    const [writer, other] = await makeEnvs({ writable: true }, 2);
    try {
      const counts = 'SELECT (SELECT count(*) FROM book), (SELECT count(*) FROM loan), (SELECT sum(age) FROM member)';
      await Promise.all([...readers, writer!, other!].map((e) => e.reset({ task: 0 })));
      const original = (await readers[0]!.step(counts)).observation;
      let stop = false;
      const seen = new Set<string>();
      const reading = Promise.all(
        readers.map(async (r) => {
          while (!stop) seen.add((await r.step(counts)).observation);
        }),
      );
      try {
        for (const write of ['DELETE FROM loan WHERE loan_id > 5', 'UPDATE member SET age = age + 100']) {
          const step = await writer!.step(write);
          expect(step.info.actionExecuted, `${write}: ${step.observation}`).toBe(true);
        }
        expect((await writer!.step('SELECT count(*) FROM loan')).observation).toBe('[(5,)]');
        expect((await writer!.step('DROP TABLE loan')).info.actionExecuted).toBe(true);
        expect((await writer!.step('SELECT count(*) FROM loan')).observation).toMatch(/^Error executing query: /);
        expect((await other!.step(counts)).observation).toBe(original);
      } finally {
        stop = true;
        await reading;
      }
      expect([...seen]).toEqual([original]);
      await writer!.reset({ task: 0 });
      expect((await writer!.step(counts)).observation).toBe(original);
    } finally {
      await Promise.all([...readers, writer!, other!].map((e) => e.close()));
    }
  });

  it('an unknown database in a task is a typed error naming it', async () => {
    const [env] = await makeEnvs({}, 1);
    try {
      const error = await env!.reset({ task: task('q', 'SELECT 1', 'no_such_db') }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DatabaseNotFoundError);
      expect((error as Error).message).toMatch(/"no_such_db".*library/);
    } finally {
      await env!.close();
    }
  });

  it('handicap lists the tables and columns; a gold that errors scores 0', async () => {
    const [env] = await makeEnvs({ handicap: true }, 1);
    try {
      const { observation } = await env!.reset({ task: task('How many books?', 'SELECT count(*) FROM no_such_table') });
      expect(observation).toContain("MySQL tables, with their properties\n- author: ['author_id', 'name', 'country', 'birth_year']\n");
      await env!.step('SELECT 1');
      const end = await env!.step('submit');
      expect(end.reward).toBe(0);
      expect(end.info.score?.details.corrupt_gold).toBe(true);
    } finally {
      await env!.close();
    }
  });
}
