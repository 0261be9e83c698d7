/**
 * Checkpoint and fork a MariaDB writable episode (issue 29): the handle carries a logical
 * dump of the session's databases (mariadb-dump in the server's sandbox) and its current
 * database; a restore loads it into a new private server. Children are independent, the
 * parent restored sees none of their rows, every child answers a dump (SHOW CREATE TABLE,
 * AUTO_INCREMENT counters, rows in stored and in sorted order, views, triggers) as the
 * parent did, and a child's score is a fresh episode's replaying the same actions. Session
 * state outside the data is refused, typed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSqlEnvs, type SqlEnv } from '../../envs/sql/index.js';
import { CheckpointError } from '../../src/errors.js';
import { dockerTestFile, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { builtinSqlImage } from '../setup/sql-image.js';

const { testRun, engine } = await dockerTestFile();

const insert = (id: number) => `INSERT INTO book VALUES (${id}, 'Forked ${id}', 1, 'poetry', 10, 2020, 1.5)`;
const seen = async (env: SqlEnv, id: number) => (await env.step(`SELECT count(*) FROM book WHERE book_id = ${id}`)).observation;
/** Rows of a statement the env ran (an error, as one row holding its message: the parent's and the child's must agree too). */
async function rows(env: SqlEnv, sql: string): Promise<unknown[][]> {
  const result = (await env.step(sql)).info.result;
  if (result?.kind === 'error') return [[`error: ${result.message}`]];
  if (result?.kind !== 'rows') throw new Error(`${sql}: ${JSON.stringify(result)}`);
  return result.rows;
}
/** What the agent could see of its databases: every table's and view's definition, AUTO_INCREMENT, rows (stored order and sorted), triggers. */
async function dump(env: SqlEnv): Promise<string> {
  const tables = await rows(env, "SELECT table_name, table_type, auto_increment FROM information_schema.tables WHERE table_schema = 'library' ORDER BY table_name");
  const parts: unknown[] = [tables];
  for (const [name] of tables) {
    const table = String(name).replace(/^'|'$/g, '');
    parts.push(await rows(env, `SHOW CREATE TABLE \`${table}\``));
    const stored = await rows(env, `SELECT * FROM \`${table}\``);
    parts.push(stored, stored.map((row) => JSON.stringify(row)).sort());
  }
  parts.push(await rows(env, "SELECT trigger_name, event_manipulation, event_object_table, action_statement, action_timing FROM information_schema.triggers WHERE trigger_schema = 'library' ORDER BY trigger_name"));
  return JSON.stringify(parts);
}

describe.skipIf(skipWithoutEngine(engine, 'MariaDB checkpoint and fork'))('checkpoint and fork a MariaDB writable episode (Docker)', () => {
  let envs: SqlEnv[] = [];
  beforeAll(async () => {
    requireEngine(engine);
    await builtinSqlImage(testRun);
    envs = await createSqlEnvs({ writable: true }, 2);
  }, 900_000);
  afterAll(async () => {
    await Promise.all(envs.map((env) => env.close()));
  });

  it('children independent, the parent restored sees none of their rows, dumps equal, a child scores as a fresh replay', async () => {
    const [env, fresh] = envs;
    await env!.reset({ task: 0 });
    const before = [
      insert(1000),
      'DELETE FROM loan WHERE loan_id % 2 = 0',
      'CREATE TABLE audit (id INT AUTO_INCREMENT PRIMARY KEY, book INT, note VARCHAR(20))',
      // A trigger that writes elsewhere: carried with its table.
      "CREATE TRIGGER book_audit AFTER INSERT ON book FOR EACH ROW INSERT INTO audit (book, note) VALUES (NEW.book_id, 'inserted')",
      insert(1003),
      "INSERT INTO audit (book, note) VALUES (1, 'x'), (2, 'y')",
      'DELETE FROM audit WHERE id >= 2',
      'CREATE VIEW poetry AS SELECT book_id, title FROM book WHERE genre = \'poetry\'',
      'CREATE INDEX by_genre ON book (genre)',
    ];
    for (const action of before) expect((await env!.step(action)).info.actionExecuted, action).toBe(true);
    const checkpoint = await env!.checkpoint();
    expect(checkpoint.info.steps).toBe(before.length);
    expect(checkpoint.info.database?.bytes).toBeGreaterThan(4096);
    expect(checkpoint.info.dropped.shellValues.join(' ')).toMatch(/LAST_INSERT_ID/);
    const parentDump = await dump(env!);
    expect(parentDump).toContain('Forked 1003');
    expect(parentDump).toContain('book_audit');
    expect(parentDump).toMatch(/AUTO_INCREMENT=4/);
    const children = await env!.fork(2);
    try {
      for (const child of children) expect(await dump(child)).toBe(parentDump);
      // The trigger fires in the child as in the parent, and the counter goes on from 4.
      const lastAudit = 'SELECT id, book FROM audit ORDER BY id DESC LIMIT 1';
      const childInsert = (await children[0]!.step(insert(1001))).observation;
      expect(await rows(children[0]!, lastAudit)).toEqual([['4', '1001']]);
      expect((await env!.step(insert(1002))).observation).toBe(childInsert);
      expect(await rows(env!, lastAudit)).toEqual([['4', '1002']]);
      expect(await seen(children[0]!, 1001)).toBe('[(1,)]');
      expect(await seen(children[1]!, 1001)).toBe('[(0,)]');
      expect(await seen(env!, 1001)).toBe('[(0,)]');
      expect(await seen(children[1]!, 1002)).toBe('[(0,)]');
      await env!.restore(checkpoint);
      for (const id of [1001, 1002]) expect(await seen(env!, id)).toBe('[(0,)]');
      expect(await seen(env!, 1000)).toBe('[(1,)]');
      // A child's score is a fresh episode's playing the same actions from reset.
      const last = 'SELECT count(*) FROM book';
      await children[0]!.step(last);
      const childEnd = await children[0]!.step('submit');
      await fresh!.reset({ task: 0 });
      for (const action of [...before, insert(1001), last]) await fresh!.step(action);
      const freshEnd = await fresh!.step('submit');
      expect(childEnd.info.score).toEqual(freshEnd.info.score);
      expect(childEnd.reward).toBe(freshEnd.reward);
    } finally {
      await Promise.all(children.map((child) => child.close()));
      env!.releaseCheckpoint(checkpoint);
    }
    await expect(env!.restore(checkpoint)).rejects.toThrow(/released/);
  }, 240_000);

  it('refuses (typed) a session holding what a dump cannot carry, and leaves it as it was', async () => {
    const [env] = envs;
    const reason = async (actions: string[]) => {
      await env!.reset({ task: 0 });
      for (const action of actions) expect((await env!.step(action)).info.actionExecuted, action).toBe(true);
      return env!.checkpoint().then(
        (checkpoint) => {
          env!.releaseCheckpoint(checkpoint);
          return 'carried';
        },
        (error: unknown) => (error instanceof CheckpointError ? `${error.code} ${String(error.details['reason'])}` : error),
      );
    };
    expect(await reason(['SET @x = 1'])).toBe('CHECKPOINT_REFUSED user-variables');
    expect(await reason(['CREATE TEMPORARY TABLE scratch (x INT)'])).toBe('CHECKPOINT_REFUSED temporary-tables');
    expect(await reason(['LOCK TABLES book READ'])).toBe('CHECKPOINT_REFUSED locks');
    expect(await reason(["SELECT GET_LOCK('intercode-fork', 0)"])).toBe('CHECKPOINT_REFUSED locks');
    expect(await reason(["PREPARE q FROM 'SELECT 1'"])).toBe('CHECKPOINT_REFUSED prepared-statements');
    expect(await reason(['HANDLER book OPEN'])).toBe('CHECKPOINT_REFUSED handler');
    // A trigger that sets a user variable when it fires: refused from its text.
    expect(await reason(['CREATE TRIGGER count_books BEFORE INSERT ON book FOR EACH ROW SET @n = 1', insert(1004)])).toBe('CHECKPOINT_REFUSED user-variables');
    expect(await reason(['CREATE SEQUENCE s', 'SELECT NEXTVAL(s)'])).toBe('CHECKPOINT_REFUSED sequences');
    // A MyISAM table with a deleted row's hole: a reloaded copy would put the next row elsewhere.
    expect(await reason(['CREATE TABLE notes (x INT) ENGINE=MyISAM', 'INSERT INTO notes VALUES (1), (2), (3)', 'DELETE FROM notes WHERE x = 2'])).toBe('CHECKPOINT_REFUSED fragmented-table');
    expect(await reason(['CREATE TABLE notes (x INT) ENGINE=MyISAM', 'INSERT INTO notes VALUES (1), (2), (3)'])).toBe('carried');
    expect(await reason(["SET SESSION sql_mode = 'ANSI_QUOTES'"])).toBe('CHECKPOINT_REFUSED session-variables');
    expect(await reason(['SET autocommit = 0'])).toBe('CHECKPOINT_REFUSED session-variables');
    // The clock and the next AUTO_INCREMENT value a session may set for itself.
    expect(await reason(['SET timestamp = 1000000000'])).toBe('CHECKPOINT_REFUSED session-variables');
    expect(await reason(['SET insert_id = 500'])).toBe('CHECKPOINT_REFUSED session-variables');
    expect(await reason(['SET ROLE NONE'])).toBe('CHECKPOINT_REFUSED account');
    expect(await reason(['SET DEFAULT ROLE NONE'])).toBe('CHECKPOINT_REFUSED account');
    // USE of another database than the task's is carried (here: the same one named again).
    expect(await reason(['USE library', insert(1005)])).toBe('carried');
    expect(await reason(['START TRANSACTION', insert(1000)])).toBe('CHECKPOINT_REFUSED open-transaction');
    // The refused checkpoint left the agent's transaction as it was.
    expect(await seen(env!, 1000)).toBe('[(1,)]');
    expect((await env!.step('ROLLBACK')).info.actionExecuted).toBe(true);
    expect(await seen(env!, 1000)).toBe('[(0,)]');
  }, 240_000);

  it('read-only (the shared server): the handle carries the database name, no data; a child answers and scores as the parent; session state is refused', async () => {
    const [parent, other] = await createSqlEnvs({}, 2);
    try {
      await parent!.reset({ task: 0 });
      const asked = 'SELECT count(*) FROM book';
      const answer = (await parent!.step(asked)).observation;
      const checkpoint = await parent!.checkpoint();
      expect(checkpoint.info.database?.bytes ?? 0).toBe(0);
      const [child] = await parent!.fork(1);
      try {
        // Writes stay refused in the child: it is a read-only session like any other.
        expect((await child!.step(insert(1009))).info.actionExecuted).toBe(false);
        expect((await child!.step(asked)).observation).toBe(answer);
        const [childEnd, parentEnd] = [await child!.step('submit'), await parent!.step('submit')];
        // (Whichever scores first verifies the gold; the other finds it cached.)
        expect(childEnd.reward).toBe(parentEnd.reward);
        expect(childEnd.info.score?.parts).toEqual(parentEnd.info.score?.parts);
        expect(childEnd.info.score?.details['agent_obs']).toBe(parentEnd.info.score?.details['agent_obs']);
      } finally {
        await child!.close();
      }
      // Restored in another env of the same backend: the same database, the same answers.
      await other!.restore(checkpoint);
      expect((await other!.step(asked)).observation).toBe(answer);
      parent!.releaseCheckpoint(checkpoint);
      await parent!.reset({ task: 0 });
      await parent!.step('SET @x = 1');
      const refused = await parent!.checkpoint().catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(CheckpointError);
      expect((refused as CheckpointError).details['reason']).toBe('user-variables');
    } finally {
      await Promise.all([parent, other].map((env) => env?.close()));
    }
  }, 240_000);

  it('refuses (typed, too-large) a dump past the bound', async () => {
    const [env] = await createSqlEnvs({ writable: true, maxCheckpointBytes: 64 * 1024 }, 1);
    try {
      await env!.reset({ task: 0 });
      await env!.step('CREATE TABLE big (x LONGTEXT)');
      expect((await env!.step("INSERT INTO big VALUES (REPEAT('x', 100000))")).info.actionExecuted).toBe(true);
      const error = await env!.checkpoint().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CheckpointError);
      expect((error as CheckpointError).details['reason']).toBe('too-large');
    } finally {
      await env!.close();
    }
  }, 240_000);
});
