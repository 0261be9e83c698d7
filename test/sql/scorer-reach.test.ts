/**
 * Issue 26, SQL side: the reward is computed where the agent cannot reach, SQL sessions
 * are disposable, and results are capped in bytes. Each attack runs against the real
 * engines (MariaDB in Docker, embedded SQLite) and is compared with its control episode.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { Task } from '../../src/datasets/index.js';
import { createSqlEnvs, type SqlEnv, type SqlEnvOptions } from '../../envs/sql/index.js';
import { dockerTestFile, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { builtinSqlImage } from '../setup/sql-image.js';

const { testRun, engine } = await dockerTestFile();

const task = (gold: string): Task => ({ index: 0, id: 'adhoc', query: 'q', gold, metadata: { db: 'library' } });
const TITLES = task('SELECT title FROM book');

/** Plays `actions` on `task`, then submits; the reward. */
async function play(env: SqlEnv, t: Task, actions: readonly string[]): Promise<{ reward: number; observations: string[] }> {
  await env.reset({ task: t });
  const observations: string[] = [];
  for (const action of actions) observations.push((await env.step(action)).observation);
  return { reward: (await env.step('submit')).reward, observations };
}

/** A step that must answer within `ms` (a hung session would hang the test otherwise). */
function within<T>(ms: number, work: Promise<T>): Promise<T> {
  return Promise.race([work, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms))]);
}

/**
 * `PRAGMA case_sensitive_like = 1`, then the gold's own query: the agent's answer misses the
 * rows (it is its connection's setting), the gold does not (control: the right answer, 1).
 * Closes `env`.
 */
async function pragmaStaysWithTheAgent(env: SqlEnv): Promise<void> {
  try {
    const gold = task("SELECT title FROM book WHERE title LIKE 'the%'");
    const control = await play(env, gold, ["SELECT title FROM book WHERE title LIKE 'The%'"]);
    const attack = await play(env, gold, ['PRAGMA case_sensitive_like = 1', "SELECT title FROM book WHERE title LIKE 'the%'"]);
    expect(attack.observations[1]).toBe('[]');
    expect(control.reward).toBe(1);
    expect(attack.reward).toBe(0);
  } finally {
    await env.close();
  }
}

/**
 * Writable mode: the agent renames the gold's table away, then answers with nothing. The gold fails
 * only because of what the agent did, so it matches nothing (0); a gold that fails on the
 * original data too keeps InterCode's reward (its empty result, []). Closes `env`.
 */
async function droppedTableMatchesNothing(env: SqlEnv): Promise<void> {
  try {
    const rename = 'ALTER TABLE book RENAME TO gone';
    const empty = 'SELECT title FROM gone WHERE 1 = 0';
    const attack = await play(env, TITLES, [rename, empty]);
    expect(attack.observations).toEqual([expect.not.stringMatching(/^Error/), '[]']);
    expect(attack.reward).toBe(0);
    // InterCode's reward for a gold that fails whatever the agent does: an empty answer matches it.
    const broken = task('SELECT no_such_column FROM book');
    expect((await play(env, broken, [rename, empty])).reward).toBe(1);
    expect((await play(env, broken, ['SELECT title FROM book WHERE 1 = 0'])).reward).toBe(1);
    // The next episode has its table back.
    expect((await play(env, TITLES, ['SELECT title FROM book'])).reward).toBe(1);
  } finally {
    await env.close();
  }
}

/** Attacks on the reward both backends must hold against. */
function forgeryChecks(
  makeEnvs: (options: Partial<SqlEnvOptions>, count: number) => Promise<SqlEnv[]>,
  label: string,
  /** A string of `n` bytes, in the backend's SQL. */
  bigCell: (n: number) => string,
): void {
  it(`${label}: control episodes: an empty answer scores 0, the right one 1`, async () => {
    const [env] = await makeEnvs({}, 1);
    try {
      const empty = 'SELECT title FROM book WHERE 1 = 0';
      expect((await play(env!, TITLES, [empty])).reward).toBe(0);
      expect((await play(env!, TITLES, ['SELECT title FROM book'])).reward).toBe(1);
    } finally {
      await env!.close();
    }
  });

  it(`${label}: the byte cap holds as rows arrive: a 4 MB cell per row gives a short, typed truncation`, async () => {
    const [env] = await makeEnvs({}, 1);
    try {
      await env!.reset({ task: TITLES });
      const step = await within(30_000, env!.step(`SELECT ${bigCell(4_000_000)} FROM book`));
      const result = step.info.result!;
      if (result.kind === 'rows') {
        expect(result.truncated).toBe('bytes');
        expect(result.rows.length).toBe(0);
      } else {
        expect(step.observation).toMatch(/out of memory|max_allowed_packet/i);
      }
      expect(step.observation.length).toBeLessThan(1.1 * 1024 ** 2);
      // Under the cap: whole, not truncated.
      const small = (await env!.step(`SELECT ${bigCell(2000)} FROM book`)).info.result!;
      expect(small.kind === 'rows' && small.rows.length === 15 && small.truncated === false).toBe(true);
      expect((await env!.step('SELECT count(*) FROM book')).observation).toBe('[(15,)]');
    } finally {
      await env!.close();
    }
  });

  it(`${label}: a byte cap set lower cuts a result at the row that passes it`, async () => {
    const [env] = await makeEnvs({ maxBytes: 10_000 }, 1);
    try {
      await env!.reset({ task: TITLES });
      const step = await env!.step(`SELECT ${bigCell(3000)} FROM book`);
      const result = step.info.result!;
      expect(result.kind === 'rows' && result.rows.length).toBe(3);
      expect(result.kind === 'rows' && result.truncated).toBe('bytes');
      expect(step.observation).toMatch(/byte limit/);
    } finally {
      await env!.close();
    }
  });
}

describe('SQL reward out of the agent reach: embedded SQLite', () => {
  const makeEnvs = (options: Partial<SqlEnvOptions>, count: number) => createSqlEnvs({ ...options, embedded: true }, count);
  forgeryChecks(makeEnvs, 'SQLite', (n) => `REPLACE(hex(zeroblob(${n / 2})), '0', 'x')`);

  it('read-only means read-only: PRAGMA query_only = 0, then DELETE, cannot make a wrong answer right (control: 0)', async () => {
    const [env] = await makeEnvs({}, 1);
    try {
      const attack = await play(env!, TITLES, ['PRAGMA query_only = 0', 'DELETE FROM book', 'SELECT title FROM book WHERE 1 = 0']);
      expect(attack.observations[1]).toMatch(/^Error executing query: .*readonly/i);
      expect(attack.reward).toBe(0);
      expect((await play(env!, TITLES, ['SELECT title FROM book WHERE 1 = 0'])).reward).toBe(0);
    } finally {
      await env!.close();
    }
  });

  it('session pragmas the agent sets (reverse_unordered_selects, case_sensitive_like) do not reach the gold', async () => {
    await pragmaStaysWithTheAgent((await makeEnvs({}, 1))[0]!);
  });
});

describe('SQL reward out of the agent reach: embedded SQLite, writable', () => {
  const makeEnvs = (count: number) => createSqlEnvs({ embedded: true, writable: true }, count);

  it("a temporary table or view shadowing the gold's table, then an empty answer, scores 0 (control: 0); the agent's writes still count", async () => {
    const [env] = await makeEnvs(1);
    try {
      const empty = 'SELECT title FROM book WHERE 1 = 0';
      expect((await play(env!, TITLES, [empty])).reward).toBe(0);
      const view = await play(env!, TITLES, ['CREATE TEMP VIEW book AS SELECT title FROM main.book WHERE 1 = 0', 'SELECT title FROM book']);
      expect(view.observations[1]).toBe('[]');
      expect(view.reward).toBe(0);
      const table = await play(env!, TITLES, ['CREATE TEMP TABLE book (title TEXT)', 'SELECT title FROM book']);
      expect(table.reward).toBe(0);
      // Writable by design: a row the agent deleted is gone for the gold too (it reads the agent's data).
      const deleted = await play(env!, TITLES, ["DELETE FROM book WHERE title NOT LIKE 'The%'", "SELECT title FROM book"]);
      expect(deleted.reward).toBe(1);
    } finally {
      await env!.close();
    }
  });

  it('with a transaction left open: a temporary view shadowing the gold then an empty answer scores 0 (the gold runs nowhere), a plain open transaction is scored as before', async () => {
    const [env] = await makeEnvs(1);
    try {
      const attack = await play(env!, TITLES, ['BEGIN', 'CREATE TEMP VIEW book AS SELECT title FROM main.book WHERE 1 = 0', 'SELECT title FROM book']);
      expect(attack.observations[2]).toBe('[]');
      expect(attack.reward).toBe(0);
      // No state of the connection's own: the gold runs in it, seeing its uncommitted writes (as before).
      const open = await play(env!, TITLES, ['BEGIN', "DELETE FROM book WHERE title NOT LIKE 'The%'", 'SELECT title FROM book']);
      expect(open.reward).toBe(1);
      // The next episode is clean.
      expect((await play(env!, TITLES, ['SELECT title FROM book'])).reward).toBe(1);
    } finally {
      await env!.close();
    }
  });

  it('session pragmas the agent sets (case_sensitive_like) do not reach the gold in writable mode either', async () => {
    await pragmaStaysWithTheAgent((await makeEnvs(1))[0]!);
  });

  it("a gold table renamed away, then an empty answer, scores 0: the gold failed only on the agent's changes", async () => {
    await droppedTableMatchesNothing((await makeEnvs(1))[0]!);
  });
});

describe.skipIf(skipWithoutEngine(engine, 'SQL reward out of the agent reach on MariaDB'))('SQL reward out of the agent reach: MariaDB (Docker)', () => {
  beforeAll(async () => {
    requireEngine(engine);
    await builtinSqlImage(testRun);
  }, 900_000);

  forgeryChecks((options, count) => createSqlEnvs(options, count), 'MariaDB', (n) => `REPEAT('x', ${n})`);

  it('SET SESSION sql_select_limit = 0, then an empty answer, scores 0 (control: 0; the gold runs on the harness connection)', async () => {
    const [env] = await createSqlEnvs({}, 1);
    try {
      const attack = await play(env!, TITLES, ['SET SESSION sql_select_limit = 0', 'SELECT title FROM book']);
      expect(attack.observations[1]).toBe('[]');
      expect(attack.reward).toBe(0);
    } finally {
      await env!.close();
    }
  });

  it('a tiny max_statement_time, then an empty answer, scores 0 (control: 0)', async () => {
    const [env] = await createSqlEnvs({}, 1);
    try {
      // A gold that takes some milliseconds (234,256 joined rows); LIMIT 0 answers at once.
      const slowGold = task('SELECT title FROM book WHERE (SELECT count(*) FROM loan a, loan b, loan c, loan d) > 0');
      // The answer itself may run past 1 ms on a loaded machine: the attack is played until it answers [].
      let attack = await play(env!, slowGold, ['SET SESSION max_statement_time = 0.001', 'SELECT title FROM book LIMIT 0']);
      for (let tries = 1; tries < 10 && attack.observations[1] !== '[]'; tries++) {
        attack = await play(env!, slowGold, ['SET SESSION max_statement_time = 0.001', 'SELECT title FROM book LIMIT 0']);
      }
      expect(attack.observations[1]).toBe('[]');
      expect(attack.reward).toBe(0);
      expect((await play(env!, slowGold, ['SELECT title FROM book LIMIT 0'])).reward).toBe(0);
    } finally {
      await env!.close();
    }
  });

  it('KILL of its own connection: the next statement answers, the episode goes on scored, and the next episode is clean', async () => {
    const [env] = await createSqlEnvs({}, 1);
    try {
      await env!.reset({ task: TITLES });
      const id = (await env!.step('SELECT CONNECTION_ID()')).info.result!;
      const threadId = id.kind === 'rows' ? String(id.rows[0]![0]) : 'none';
      const kill = await within(20_000, env!.step(`KILL ${threadId}`));
      expect(kill.truncated).toBe(false);
      const next = await within(20_000, env!.step('SELECT title FROM book'));
      expect(next.truncated).toBe(false);
      const after = await within(20_000, env!.step('SELECT title FROM book'));
      expect(after.observation).toMatch(/^\[\('/);
      expect((await within(20_000, env!.step('submit'))).reward).toBe(1);
      expect((await within(20_000, play(env!, TITLES, ['SELECT title FROM book']))).reward).toBe(1);
    } finally {
      await env!.close();
    }
  });

  it('SET PASSWORD on its account locks no later session out', async () => {
    const envs = await createSqlEnvs({}, 2);
    try {
      await envs[0]!.reset({ task: TITLES });
      await envs[0]!.step("SET PASSWORD = PASSWORD('x')");
      await envs[0]!.step('ALTER USER CURRENT_USER() IDENTIFIED BY \'y\'');
      expect((await play(envs[1]!, TITLES, ['SELECT title FROM book'])).reward).toBe(1);
      expect((await play(envs[0]!, TITLES, ['SELECT title FROM book'])).reward).toBe(1);
      const [later] = await createSqlEnvs({}, 1);
      try {
        expect((await play(later!, TITLES, ['SELECT title FROM book'])).reward).toBe(1);
      } finally {
        await later!.close();
      }
    } finally {
      await Promise.all(envs.map((e) => e.close()));
    }
  });

  it('a GET_LOCK taken in one episode is gone in the next (its own and another env)', async () => {
    const envs = await createSqlEnvs({}, 2);
    try {
      await envs[0]!.reset({ task: TITLES });
      expect((await envs[0]!.step("SELECT GET_LOCK('intercode-test', 0)")).observation).toBe('[(1,)]');
      await envs[0]!.reset({ task: TITLES });
      expect((await envs[0]!.step("SELECT IS_USED_LOCK('intercode-test')")).observation).toBe('[(None,)]');
      await envs[1]!.reset({ task: TITLES });
      expect((await envs[1]!.step("SELECT GET_LOCK('intercode-test', 0)")).observation).toBe('[(1,)]');
    } finally {
      await Promise.all(envs.map((e) => e.close()));
    }
  });

  it('one session cannot see or kill another session or the gold connection', async () => {
    const envs = await createSqlEnvs({}, 2);
    try {
      await Promise.all(envs.map((e) => e.reset({ task: TITLES })));
      const other = (await envs[1]!.step('SELECT CONNECTION_ID()')).info.result!;
      const otherId = other.kind === 'rows' ? String(other.rows[0]![0]) : 'none';
      expect((await envs[0]!.step('SELECT count(*) FROM information_schema.processlist')).observation).toBe('[(1,)]');
      expect((await envs[0]!.step(`KILL ${otherId}`)).observation).toMatch(/^Error executing query: You are not owner of thread/);
      expect((await envs[1]!.step('SELECT count(*) FROM book')).observation).toBe('[(15,)]');
    } finally {
      await Promise.all(envs.map((e) => e.close()));
    }
  });

  it("writable: a gold table renamed away, then an empty answer, scores 0: the gold failed only on the agent's changes", async () => {
    await droppedTableMatchesNothing((await createSqlEnvs({ writable: true }, 1))[0]!);
  });

  it('writable: LOCK TABLES … WRITE, then an empty answer: the gold waits, is stopped, and matches nothing (0)', async () => {
    const [env] = await createSqlEnvs({ writable: true, timeoutMs: 2000 }, 1);
    try {
      const attack = await within(30_000, play(env!, TITLES, ['LOCK TABLES book WRITE', 'SELECT title FROM book WHERE 1 = 0']));
      expect(attack.reward).toBe(0);
      expect((await play(env!, TITLES, ['SELECT title FROM book'])).reward).toBe(1);
    } finally {
      await env!.close();
    }
  });
});
