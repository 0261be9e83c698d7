/**
 * Issue 25 item 4, SQL: after hostile episodes, a reset SQL env answers every read an agent
 * can make exactly as a new env does. The observer reads, as the agent: every table's rows,
 * the schema (information_schema / sqlite_master: tables, columns, views, triggers,
 * routines, sequences), its account's grants and role, the session variables, and probes
 * for state a session can hold (user variables, temporary tables, prepared statements,
 * user locks, an open transaction or XA transaction, HANDLERs, pragmas).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { Task } from '../../src/datasets/index.js';
import { createSqlEnvs, type SqlEnv, type SqlEnvOptions } from '../../envs/sql/index.js';
import { dockerTestFile, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { builtinSqlImage } from '../setup/sql-image.js';

const { testRun, engine } = await dockerTestFile();

const TASK: Task = { index: 0, id: 'adhoc', query: 'q', gold: 'SELECT title FROM book', metadata: { db: 'library' } };

/**
 * Session variables that differ between any two new sessions (the connection's own id,
 * the clock, the random seed): left out of the comparison, nothing else is.
 */
const PER_CONNECTION_VARIABLES = new Set(['pseudo_thread_id', 'timestamp', 'rand_seed1', 'rand_seed2']);

/** One read as the agent: its observation. */
async function read(env: SqlEnv, sql: string): Promise<string> {
  return `${sql}\n=> ${(await env.step(sql)).observation}`;
}

/** The rows of a result (for statements whose rows the observer iterates over). */
async function rows(env: SqlEnv, sql: string): Promise<string[][]> {
  const result = (await env.step(sql)).info.result;
  if (result?.kind !== 'rows') throw new Error(`${sql}: ${JSON.stringify(result)}`);
  return result.rows.map((row) => row.map(String));
}

/** The name and password hash of a per-session account (random), the same in every session. */
const anonymised = (text: string) => text.replace(/ic_[0-9a-f]{16}/g, 'ic_<session>').replace(/PASSWORD '\*[0-9A-F]{40}'/g, "PASSWORD '<session>'");

async function observeMariaDb(env: SqlEnv): Promise<string[]> {
  const seen: string[] = [];
  const tables = await rows(env, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'library' ORDER BY table_name");
  for (const [table] of tables) seen.push(await read(env, `SELECT * FROM library.\`${table!.slice(1, -1)}\``));
  for (const sql of [
    'SELECT table_schema, table_name, table_type, engine, auto_increment, table_collation, create_options FROM information_schema.tables ORDER BY 1, 2',
    'SELECT table_schema, table_name, column_name, ordinal_position, column_type, is_nullable, column_default, extra FROM information_schema.columns ORDER BY 1, 2, 4',
    'SELECT table_schema, table_name, view_definition, definer FROM information_schema.views ORDER BY 1, 2',
    'SELECT trigger_schema, trigger_name, event_object_table, action_statement FROM information_schema.triggers ORDER BY 1, 2',
    'SELECT routine_schema, routine_name, routine_type, definer FROM information_schema.routines ORDER BY 1, 2',
    'SELECT table_schema, table_name, constraint_name, constraint_type FROM information_schema.table_constraints ORDER BY 1, 2, 3',
    'SELECT schema_name FROM information_schema.schemata ORDER BY 1',
    'SELECT grantee, privilege_type FROM information_schema.user_privileges ORDER BY 1, 2',
    'SELECT grantee, table_schema, privilege_type FROM information_schema.schema_privileges ORDER BY 1, 2, 3',
    'SELECT * FROM information_schema.applicable_roles ORDER BY 1, 2',
    'SHOW GRANTS',
    'SELECT current_role(), current_user() = user() OR 1, database(), @@in_transaction, @@autocommit',
    "SELECT IS_USED_LOCK('intercode-hostile'), @hostile, @@session.sql_select_limit, @@session.max_statement_time",
    'SELECT * FROM hostile_tmp',
    'EXECUTE hostile_stmt',
    'HANDLER book READ FIRST',
    'SELECT count(*) FROM information_schema.processlist',
    'XA RECOVER',
  ]) {
    seen.push(anonymised(await read(env, sql)));
  }
  const variables = await rows(env, 'SHOW SESSION VARIABLES');
  seen.push(variables.filter(([name]) => !PER_CONNECTION_VARIABLES.has(name!.slice(1, -1))).map((row) => row.join('=')).join('\n'));
  return seen;
}

async function observeSqlite(env: SqlEnv): Promise<string[]> {
  const seen: string[] = [];
  const tables = await rows(env, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
  for (const [table] of tables) seen.push(await read(env, `SELECT * FROM main."${table!.slice(1, -1)}"`));
  for (const sql of [
    'SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name',
    'SELECT type, name, tbl_name, sql FROM sqlite_temp_master ORDER BY type, name',
    'SELECT name FROM pragma_database_list ORDER BY name',
    'PRAGMA reverse_unordered_selects',
    'PRAGMA foreign_keys',
    'PRAGMA recursive_triggers',
    'PRAGMA query_only',
    'PRAGMA defer_foreign_keys',
    'PRAGMA cache_size',
    "SELECT 'a' LIKE 'A'",
    'SELECT * FROM hostile_tmp',
    'SELECT title FROM book',
  ]) {
    seen.push(await read(env, sql));
  }
  return seen;
}

/**
 * Plays `actions` (their outcomes do not matter: many are refused) and returns what the
 * observer reads in the episode before it is submitted: the proof that the episode changed
 * what an agent sees, without which an equal reading after the reset would prove nothing.
 */
async function playHostile(env: SqlEnv, actions: readonly string[], observe: (env: SqlEnv) => Promise<string[]>): Promise<string[]> {
  await env.reset({ task: TASK });
  for (const action of actions) await env.step(action);
  const seen = await observe(env);
  await env.step('submit');
  return seen;
}

/**
 * A deliberately wrong reset, the negative control: the env is told that its session was not
 * touched, so it keeps the hostile session instead of starting a new one. The observer must
 * see the difference, or its equal readings after a real reset would prove nothing.
 */
async function resetKeepingTheSession(env: SqlEnv): Promise<void> {
  const state = env as unknown as { touched: boolean };
  expect(state.touched, 'the env marks a hostile episode as touching its session').toBe(true);
  state.touched = false;
  await env.reset({ task: TASK });
  state.touched = true;
}

/** The observer's reading of a new env is whole: every table's rows and every probe answered. */
function expectWellFormed(seen: readonly string[]): void {
  expect(seen.length).toBeGreaterThan(10);
  expect(seen.every((reading) => reading.length > 0)).toBe(true);
  const book = seen.find((reading) => /^SELECT \* FROM \S*book\W*\n/.test(reading));
  expect(book, 'the observer read the book table').toBeDefined();
  expect(book!.match(/\(\d+, /g)?.length ?? 0, `the book table has rows: ${book!.slice(0, 200)}`).toBeGreaterThan(3);
}

/** Statements that change only the session: every mode's agent can run them. */
const SESSION_HOSTILE_MARIADB = [
  'SET @hostile = 42',
  'SET SESSION sql_select_limit = 1',
  'SET SESSION max_statement_time = 0.5',
  "SET SESSION sql_mode = 'ANSI_QUOTES'",
  'SET SESSION autocommit = 0',
  'SET NAMES latin1',
  "PREPARE hostile_stmt FROM 'SELECT 1'",
  "SELECT GET_LOCK('intercode-hostile', 0)",
  'HANDLER book OPEN',
  'SET ROLE NONE',
  "SET PASSWORD = PASSWORD('hostile')",
  'SET DEFAULT ROLE NONE',
  'SET GLOBAL max_connections = 5',
  "SET GLOBAL sql_mode = 'ANSI'",
  "CREATE USER 'hostile'@'localhost'",
  "XA START 'hostile'",
];

/** Statements that change data and the schema (writable mode). */
const DATA_HOSTILE_MARIADB = [
  "XA END 'hostile'",
  "XA ROLLBACK 'hostile'",
  'SET ROLE intercode_writer',
  'CREATE TABLE hostile (x INT)',
  'INSERT INTO hostile VALUES (1)',
  "INSERT INTO branch VALUES (99, 'hostile', 'x', 1999)",
  'DELETE FROM loan WHERE loan_id > 20',
  'UPDATE member SET age = age + 1',
  'ALTER TABLE book ADD COLUMN hostile INT',
  'DROP TABLE copy',
  'CREATE VIEW hostile_view AS SELECT 1 AS x',
  'CREATE TRIGGER hostile_trigger BEFORE INSERT ON member FOR EACH ROW SET NEW.age = 0',
  'CREATE PROCEDURE hostile_proc() SELECT 1',
  'CREATE FUNCTION hostile_fn() RETURNS INT RETURN 1',
  'CREATE SEQUENCE hostile_seq',
  'SELECT NEXTVAL(hostile_seq)',
  "CREATE DEFINER = 'intercode_admin'@'localhost' VIEW hostile_definer AS SELECT 1",
  'CREATE TEMPORARY TABLE hostile_tmp (x INT)',
  'CREATE TEMPORARY TABLE author (x INT)',
  'START TRANSACTION',
  'INSERT INTO author (author_id, name) VALUES (999, "uncommitted")',
  'LOCK TABLES book WRITE',
];

const SESSION_HOSTILE_SQLITE = [
  'PRAGMA reverse_unordered_selects = 1',
  'PRAGMA case_sensitive_like = 1',
  'PRAGMA foreign_keys = 1',
  'PRAGMA recursive_triggers = 1',
  'PRAGMA cache_size = 7',
  'PRAGMA query_only = 0',
  "ATTACH ':memory:' AS hostile",
  'CREATE TEMP TABLE hostile_tmp (x)',
  'CREATE TEMP TABLE book (x)',
  'BEGIN',
];

const DATA_HOSTILE_SQLITE = [
  'COMMIT',
  'CREATE TABLE hostile (x)',
  "INSERT INTO branch VALUES (99, 'hostile', 'x', 1999)",
  'DELETE FROM loan WHERE loan_id > 20',
  'UPDATE member SET age = age + 1',
  'ALTER TABLE book ADD COLUMN hostile INT',
  'DROP TABLE copy',
  'CREATE VIEW hostile_view AS SELECT 1 AS x',
  'CREATE TRIGGER hostile_trigger BEFORE INSERT ON member BEGIN SELECT 1; END',
  'CREATE INDEX hostile_index ON book (title)',
  'BEGIN',
  'DELETE FROM book',
];

/**
 * Every hostile episode, then a reset, then the observer, against the observer in a new
 * env: equal. Each episode is first seen to change what the observer reads, and a wrong
 * reset after it is seen to be flagged. Also runs the gold of an episode played in the reset
 * env, which must score 1.
 */
function equivalence(makeEnvs: (options: Partial<SqlEnvOptions>, count: number) => Promise<SqlEnv[]>, observe: (env: SqlEnv) => Promise<string[]>, episodes: readonly (readonly string[])[]): void {
  it('a reset env answers every read as a new one does, after each hostile episode; a wrong reset is flagged', async () => {
    const [fresh] = await makeEnvs({}, 1);
    const [used] = await makeEnvs({}, 1);
    try {
      await fresh!.reset({ task: TASK });
      const expected = await observe(fresh!);
      expectWellFormed(expected);
      for (const [i, episode] of episodes.entries()) {
        const during = await playHostile(used!, episode, observe);
        expect(during, `hostile episode ${i} changes what the observer reads`).not.toEqual(expected);
        await used!.reset({ task: TASK });
        expect(await observe(used!), `after hostile episode ${i}`).toEqual(expected);
        await used!.step('SELECT title FROM book');
        expect((await used!.step('submit')).reward).toBe(1);

        await playHostile(used!, episode, observe);
        await resetKeepingTheSession(used!);
        expect(await observe(used!), `a wrong reset after hostile episode ${i} is flagged`).not.toEqual(expected);
      }
    } finally {
      await Promise.all([fresh!.close(), used!.close()]);
    }
  }, 300_000);
}

describe('SQL reset ≡ new: embedded SQLite', () => {
  describe('read-only', () => {
    equivalence((options, count) => createSqlEnvs({ ...options, embedded: true }, count), observeSqlite, [SESSION_HOSTILE_SQLITE, [...SESSION_HOSTILE_SQLITE, ...DATA_HOSTILE_SQLITE]]);
  });
  describe('writable', () => {
    equivalence((options, count) => createSqlEnvs({ ...options, embedded: true, writable: true }, count), observeSqlite, [
      SESSION_HOSTILE_SQLITE,
      [...SESSION_HOSTILE_SQLITE, ...DATA_HOSTILE_SQLITE],
      DATA_HOSTILE_SQLITE.slice(1),
    ]);
  });
});

describe.skipIf(skipWithoutEngine(engine, 'SQL reset ≡ new on MariaDB'))('SQL reset ≡ new: MariaDB (Docker)', () => {
  beforeAll(async () => {
    requireEngine(engine);
    await builtinSqlImage(testRun);
  }, 900_000);

  describe('read-only', () => {
    equivalence((options, count) => createSqlEnvs(options, count), observeMariaDb, [
      SESSION_HOSTILE_MARIADB,
      // One statement alone: a session that only took a user lock is still a changed session.
      ["SELECT GET_LOCK('intercode-hostile', 0)"],
      ['HANDLER book OPEN'],
    ]);
  });
  describe('writable', () => {
    equivalence((options, count) => createSqlEnvs({ ...options, writable: true }, count), observeMariaDb, [
      [...SESSION_HOSTILE_MARIADB, ...DATA_HOSTILE_MARIADB],
      DATA_HOSTILE_MARIADB.slice(2),
      ["SELECT GET_LOCK('intercode-hostile', 0)"],
    ]);
  });
});
