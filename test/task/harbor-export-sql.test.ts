/**
 * `intercode export sql --format harbor` round trip in Docker: built-in SQL tasks 0 (a count),
 * 3 (ORDER BY, eight rows) and 5 (an average: a Decimal) exported as Harbor task directories
 * (one container FROM the SQL env's data image), with two golds of our own (every kind of value
 * rendered; groups without ORDER BY), and played through the task env: each oracle scores 1.0
 * (the verifier's rows equal those the SQL env read at export); a wrong query 0; the right rows in another order exactly what the SQL env gives
 * the same query; and a hostile agent, root in the container and owner of the server, gets
 * nothing from dropping or emptying the gold's table (the gold's rows were read at export),
 * from an answer file that is a symbolic link, nor is hurt by stopping the server.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlPlugin } from '../../envs/sql/plugin.js';
import type { SqlEnv } from '../../envs/sql/index.js';
import { taskPlugin } from '../../envs/task/plugin.js';
import { writeHarborTask } from '../../envs/task/harbor-writer.js';
import { createTaskEnvs, readTaskDirs, type TaskDirEnv } from '../../envs/task/index.js';
import type { Task } from '../../src/datasets/index.js';
import type { StepResult } from '../../src/env/types.js';
import { ConfigError } from '../../src/errors.js';
import { EngineSet } from '../../src/sandbox/backends/engine-set.js';
import { dockerTestFile, skipWithoutEngine } from '../setup/docker.js';

const { engine } = await dockerTestFile();

describe('export sql --format harbor without a server image', () => {
  it('refuses the embedded SQLite backend with a ConfigError (a task image is FROM the data image)', async () => {
    const [embedded] = (await sqlPlugin.createEnvs({ embedded: true }, 1, { purpose: 'run', log: () => undefined, engines: EngineSet.local() })) as SqlEnv[];
    try {
      await expect(sqlPlugin.harbor!.task(embedded!, embedded!.tasks[0]!, {})).rejects.toThrow(ConfigError);
      await expect(sqlPlugin.harbor!.task(embedded!, embedded!.tasks[0]!, {})).rejects.toThrow(/read-only MariaDB server only/);
    } finally {
      await embedded!.close();
    }
  });
});

const IDS = ['0', '3', '5'];
/**
 * Golds of our own over the built-in database: every kind of value the verifier renders
 * (its oracle scores 1 only when the verifier's strings equal the SQL env's, read at export),
 * and groups without ORDER BY (MariaDB sorts them by key; the env, and so the verifier, asks
 * for MySQL 8's first-seen order).
 */
const OWN: Task[] = [
  {
    index: 0,
    id: 'values',
    query: 'every kind of value',
    gold:
      "SELECT 7, -12345678901234567, 2.5e0, 0.1 + 0.2e0, 1e20, CAST(1e-5 AS DOUBLE), CAST(3.5 AS FLOAT), CAST(1.50 AS DECIMAL(6,2)), avg(pages), " +
      "DATE '2020-01-02', TIMESTAMP '2020-01-02 03:04:05.25', TIME '-01:02:03', TIME '00:00:00', NULL, 'it''s \"q\"\\n\\t\\\\ nul\\0', " +
      "'é€😀 ', _binary 'a\\0b''', b'101', max(title) FROM book",
    metadata: { db: 'library' },
  },
  { index: 1, id: 'groups', query: 'books per genre', gold: 'SELECT genre, count(*) FROM book GROUP BY genre', metadata: { db: 'library' } },
];
const answer = (sql: string) => `mkdir -p /logs/agent && printf '%s' "${sql}" > /logs/agent/answer.sql`;

/** Plays `actions` then submit; the submit's result, the actions' observations in `seen`. */
async function play(env: TaskDirEnv, name: string, actions: readonly string[], seen: string[] = []): Promise<StepResult> {
  await env.reset({ task: env.tasks.find((t) => t.id === name)! });
  for (const action of actions) {
    const step = await env.step(action);
    expect(step.terminated).toBe(false);
    seen.push(step.observation);
  }
  return env.step('submit');
}

describe.skipIf(skipWithoutEngine(engine, 'harbor export of SQL tasks'))('export sql --format harbor, round trip in Docker', () => {
  let out: string;
  let tasks: TaskDirEnv;
  let sql: SqlEnv;
  const engines = EngineSet.local();

  beforeAll(async () => {
    out = await mkdtemp(join(tmpdir(), 'intercode-harbor-export-sql-'));
    [sql] = (await sqlPlugin.createEnvs({}, 1, { purpose: 'run', log: () => undefined, engines })) as SqlEnv[];
    expect(sql!.tasks.map((t) => t.id).slice(0, 6)).toEqual(['0', '1', '2', '3', '4', '5']);
    for (const id of IDS) await writeHarborTask(out, await sqlPlugin.harbor!.task(sql!, sql!.tasks.find((t) => t.id === id)!, {}));
    for (const task of OWN) await writeHarborTask(out, await sqlPlugin.harbor!.task(sql!, task, {}));
    [tasks] = await createTaskEnvs({ data: out, keepWarmMs: 0, engines }, 1);
  }, 600_000);
  afterAll(async () => {
    await tasks?.close();
    await sql?.close();
    if (out) await rm(out, { recursive: true, force: true });
  });

  it('writes one-container task directories: FROM the data image, the gold rows as the SQL env reads them', async () => {
    const dirs = await readTaskDirs(out);
    expect(dirs.map((d) => d.config.name)).toEqual(['sql-0', 'sql-3', 'sql-5', 'sql-groups', 'sql-values']);
    const ordered = dirs.find((d) => d.config.name === 'sql-3')!;
    expect(ordered.instruction).toContain('/logs/agent/answer.sql');
    expect(await readFile(join(ordered.root, 'environment', 'Dockerfile'), 'utf8')).toMatch(/^FROM intercode-ts\/sql-data:[0-9a-f]+\n/);
    const expected = JSON.parse(await readFile(join(ordered.root, 'tests', 'expected.json'), 'utf8'));
    await sql.reset({ task: sql.tasks[3]! });
    const inSqlEnv = await sql.step(String(sql.tasks[3]!.gold));
    expect(`[${expected.gold.join(', ')}]`).toBe(inSqlEnv.observation);
    expect(expected).toMatchObject({ database: 'library', ordered: true });
    const values = JSON.parse(await readFile(join(out, 'sql-values', 'tests', 'expected.json'), 'utf8')).gold;
    expect(values).toHaveLength(1);
    expect(values[0]).toContain("Decimal('1.50'), ");
    // The groups' first-seen order is not their sorted order: a verifier that let MariaDB sort them would not score 1.
    const groups: string[] = JSON.parse(await readFile(join(out, 'sql-groups', 'tests', 'expected.json'), 'utf8')).gold;
    expect(groups).not.toEqual([...groups].sort());
  });

  it('every oracle scores 1.0 through the task env', async () => {
    for (const task of tasks.tasks) {
      const result = await play(tasks, task.id, taskPlugin.goldActions(task).slice(0, -1));
      expect({ task: task.id, reward: result.reward, truncated: result.truncated }).toEqual({ task: task.id, reward: 1, truncated: false });
    }
  });

  it('a wrong query scores 0; the right rows in reverse order score what the SQL env gives them', async () => {
    expect((await play(tasks, 'sql-0', [answer('SELECT count(*) FROM author')])).reward).toBe(0);
    expect((await play(tasks, 'sql-5', [answer('SELECT avg(price) FROM book')])).reward).toBe(0);
    const reversed = 'SELECT name, country FROM author ORDER BY name DESC';
    await sql.reset({ task: sql.tasks[3]! });
    await sql.step(reversed);
    const inSqlEnv = await sql.step('submit');
    const exported = await play(tasks, 'sql-3', [answer(reversed)]);
    expect(inSqlEnv.reward).toBeLessThan(0);
    expect(exported.reward).toBe(inSqlEnv.reward);
    expect(exported.info.score?.parts).toEqual({ reward: inSqlEnv.reward, ...inSqlEnv.info.score?.parts });
  });

  it("the agent's changes to the data cannot change the gold's rows: an empty result after dropping its table, or the gold after emptying it, scores 0", async () => {
    // InterCode's [] for a gold that fails would let an empty result score 1 after DROP TABLE.
    const seen: string[] = [];
    const dropped = await play(tasks, 'sql-0', ['sql library -e "SET FOREIGN_KEY_CHECKS = 0; DROP TABLE book"; sql library -e "SELECT count(*) FROM book"', answer('SELECT 1 FROM DUAL WHERE 1 = 0')], seen);
    expect(seen[0]).toMatch(/book' doesn't exist/);
    expect(dropped.reward).toBe(0);
    const emptied = await play(tasks, 'sql-0', ['sql library -e "SET FOREIGN_KEY_CHECKS = 0; DELETE FROM book"', answer('SELECT count(*) FROM book')]);
    expect(emptied.reward).toBe(0);
    // The same container's next episode has its data back (restored in place).
    expect((await play(tasks, 'sql-0', [answer('SELECT count(*) FROM book')])).reward).toBe(1);
  });

  it('an answer file that is a symbolic link is no answer; a server the agent stopped is started again', async () => {
    const linked = await play(tasks, 'sql-0', ['printf "SELECT count(*) FROM book" > /root/q.sql && mkdir -p /logs/agent && ln -s /root/q.sql /logs/agent/answer.sql']);
    expect(linked.reward).toBe(0);
    const seen: string[] = [];
    const stopped = await play(tasks, 'sql-0', [answer('SELECT count(*) FROM book'), 'sql -e SHUTDOWN; sleep 2; mariadb-admin --socket=/run/intercode-sql/mysqld.sock ping >/dev/null 2>&1 || echo server-stopped'], seen);
    expect(seen[1]).toContain('server-stopped');
    expect(stopped.reward).toBe(1);
  });
});
