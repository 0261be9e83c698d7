/**
 * Checkpoint and fork an embedded SQLite episode (issue 29; sql.js, no Docker). Writable mode:
 * the database's bytes follow the handle, so rows written after the checkpoint in one child
 * are seen in no other child nor in the parent restored, every child answers a dump of the
 * database (schema, rows, page and freelist counts) as the parent did, and a child's score
 * is a fresh replay's of the same actions. Read-only mode: the handle carries no data (none
 * can change). Session state outside the database's bytes is refused, typed.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import initSqlJs from 'sql.js';
import { describe, expect, it } from 'vitest';
import { makeTempDir } from '../datasets/tmp-files.js';
import { createSqlEnvs, type SqlEnv } from '../../envs/sql/index.js';
import { CheckpointError } from '../../src/errors.js';
import { VecEnv } from '../../src/vec/index.js';

/** What the agent could see of the database: schema, every book, page and freelist counts, schema version. */
const DUMP =
  "SELECT (SELECT group_concat(type || ' ' || name || ' ' || coalesce(sql, ''), '; ') FROM sqlite_schema), (SELECT group_concat(book_id || '=' || title || '=' || price, ', ') FROM book), (SELECT page_count FROM pragma_page_count), (SELECT freelist_count FROM pragma_freelist_count), (SELECT schema_version FROM pragma_schema_version), (SELECT user_version FROM pragma_user_version)";
const BOOKS = 'SELECT count(*) FROM book';
const seen = async (env: SqlEnv, id: number) => (await env.step(`SELECT count(*) FROM book WHERE book_id = ${id}`)).observation;
const insert = (id: number) => `INSERT INTO book VALUES (${id}, 'Forked ${id}', 1, 'poetry', 10, 2020, 1.5)`;

describe('checkpoint and fork an embedded SQLite episode', () => {
  it('writable: children independent, the parent restored sees none of their rows, dumps equal, scores equal a fresh replay', async () => {
    const [env, fresh] = await createSqlEnvs({ embedded: true, writable: true }, 2);
    try {
      await env!.reset({ task: 0 });
      const before = [insert(1000), 'DELETE FROM loan WHERE loan_id % 2 = 0', 'CREATE INDEX by_genre ON book (genre)'];
      for (const action of before) expect((await env!.step(action)).info.actionExecuted, action).toBe(true);
      const checkpoint = await env!.checkpoint();
      expect(checkpoint.info.steps).toBe(3);
      expect(checkpoint.info.database?.bytes).toBeGreaterThan(4096);
      const children = await env!.fork(2);
      try {
        const parentDump = (await env!.step(DUMP)).observation;
        expect(parentDump).toContain('Forked 1000');
        expect(parentDump).toContain('by_genre');
        for (const child of children) {
          expect((await child.step(DUMP)).observation).toBe(parentDump);
        }
        await children[0]!.step(insert(1001));
        await env!.step(insert(1002));
        expect(await seen(children[0]!, 1001)).toBe('[(1,)]');
        expect(await seen(children[1]!, 1001)).toBe('[(0,)]');
        expect(await seen(env!, 1001)).toBe('[(0,)]');
        expect(await seen(children[1]!, 1002)).toBe('[(0,)]');
        await env!.restore(checkpoint);
        for (const id of [1001, 1002]) expect(await seen(env!, id)).toBe('[(0,)]');
        expect(await seen(env!, 1000)).toBe('[(1,)]');
        // A child's score is a fresh episode's playing the same actions from reset.
        await children[0]!.step(BOOKS);
        const childEnd = await children[0]!.step('submit');
        await fresh!.reset({ task: 0 });
        for (const action of [...before, insert(1001), BOOKS]) await fresh!.step(action);
        const freshEnd = await fresh!.step('submit');
        expect(childEnd.info.score).toEqual(freshEnd.info.score);
        expect(childEnd.reward).toBe(freshEnd.reward);
        expect(String(childEnd.info.score?.details['agent_obs'])).toMatch(/^\[\(\d+,\)\]$/);
      } finally {
        await Promise.all(children.map((child) => child.close()));
        env!.releaseCheckpoint(checkpoint);
      }
      await expect(env!.restore(checkpoint)).rejects.toThrow(/released/);
    } finally {
      await env!.close();
      await fresh!.close();
    }
  });

  it('read-only: the handle carries no data; children score as the parent', async () => {
    const [env] = await createSqlEnvs({ embedded: true }, 1);
    try {
      await env!.reset({ task: 0 });
      expect((await env!.step(insert(1000))).info.actionExecuted).toBe(false);
      await env!.step(BOOKS);
      const checkpoint = await env!.checkpoint();
      expect(checkpoint.info.database?.bytes).toBe(0);
      env!.releaseCheckpoint(checkpoint);
      const [child] = await env!.fork(1);
      try {
        // The same score but for where the gold came from (the parent's run filled the cache).
        const { gold_cached: _parentCached, ...parentDetails } = (await env!.peekScore()).details;
        const childScore = await child!.peekScore();
        const { gold_cached: _childCached, ...childDetails } = childScore.details;
        expect(childDetails).toEqual(parentDetails);
        expect(childScore.reward).toBe(1);
        expect((await child!.step(insert(1000))).info.actionExecuted).toBe(false);
        for (const side of [child!, env!]) await side.step(BOOKS);
        expect((await child!.step('submit')).reward).toBe((await env!.step('submit')).reward);
      } finally {
        await child!.close();
      }
    } finally {
      await env!.close();
    }
  });

  it('refuses (typed) a session whose state is not in the database bytes: a PRAGMA, a temporary table, an attached database, an open transaction', async () => {
    const [env] = await createSqlEnvs({ embedded: true, writable: true }, 1);
    try {
      const reason = async (actions: string[]) => {
        await env!.reset({ task: 0 });
        for (const action of actions) expect((await env!.step(action)).info.actionExecuted, action).toBe(true);
        return env!.checkpoint().then(
          () => 'carried',
          (error: unknown) => (error instanceof CheckpointError ? `${error.code} ${String(error.details['reason'])}` : error),
        );
      };
      expect(await reason(['PRAGMA case_sensitive_like = 1'])).toBe('CHECKPOINT_REFUSED pragma');
      expect(await reason(['CREATE TEMP TABLE scratch (x)'])).toBe('CHECKPOINT_REFUSED temp-objects');
      expect(await reason(["ATTACH ':memory:' AS other"])).toBe('CHECKPOINT_REFUSED attached-database');
      expect(await reason(['BEGIN', insert(1000)])).toBe('CHECKPOINT_REFUSED open-transaction');
      // The refused checkpoint left the agent's transaction as it was.
      expect(await seen(env!, 1000)).toBe('[(1,)]');
      expect((await env!.step('ROLLBACK')).info.actionExecuted).toBe(true);
      expect(await seen(env!, 1000)).toBe('[(0,)]');
    } finally {
      await env!.close();
    }
  });

  it('VecEnv.fork continues a slot\'s SQLite episode in free slots, each on its own copy', async () => {
    const vec = new VecEnv(await createSqlEnvs({ embedded: true, writable: true }, 3), { autoreset: 'disabled' });
    try {
      await vec.reset([0]);
      vec.send([insert(1000)], [0]);
      await vec.recv(1);
      expect(await vec.fork(0, 2)).toEqual([1, 2]);
      vec.send([insert(1001), 'SELECT group_concat(book_id) FROM book WHERE book_id >= 1000'], [1, 2]);
      const steps = await vec.recv(2);
      expect(steps.find((s) => s.envId === 2)?.observation).toBe("[('1000',)]");
      vec.send(['SELECT group_concat(book_id) FROM book WHERE book_id >= 1000', 'SELECT group_concat(book_id) FROM book WHERE book_id >= 1000'], [0, 1]);
      const after = await vec.recv(2);
      expect(Object.fromEntries(after.map((s) => [s.envId, s.observation]))).toEqual({ 0: "[('1000',)]", 1: "[('1000,1001',)]" });
    } finally {
      await vec.close();
    }
  });

  it('refuses (typed) a checkpoint restored into a backend of the other mode or of other data', async () => {
    const [writable] = await createSqlEnvs({ embedded: true, writable: true }, 1);
    const [readOnly] = await createSqlEnvs({ embedded: true }, 1);
    const { dir, remove } = await makeTempDir();
    const SQL = await initSqlJs();
    const db = new SQL.Database();
    db.run('CREATE TABLE book (book_id INTEGER PRIMARY KEY)');
    await writeFile(join(dir, 'library.sqlite'), db.export());
    db.close();
    const [otherData] = await createSqlEnvs({ sqlite: [join(dir, 'library.sqlite')], writable: true }, 1);
    try {
      await writable!.reset({ task: 0 });
      await writable!.step(insert(1000));
      const checkpoint = await writable!.checkpoint();
      const reason = (promise: Promise<unknown>) => promise.then(() => 'restored', (error: unknown) => (error instanceof CheckpointError ? String(error.details['reason']) : error));
      // A read-only env would score the restored rows against its pristine copy's gold.
      expect(await reason(readOnly!.restore(checkpoint))).toBe('other-mode');
      expect(await reason(otherData!.restore(checkpoint))).toBe('other-data');
      writable!.releaseCheckpoint(checkpoint);
    } finally {
      await writable!.close();
      await readOnly!.close();
      await otherData!.close();
      await remove();
    }
  });
});
