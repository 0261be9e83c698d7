/**
 * A VecEnv over envs in worker threads keeps every guarantee of one over envs on the main
 * thread: the same tests run with threads 1 (today's path: the envs on this thread) and 2
 * (startThreadedEnvs), on the SQL env's embedded SQLite backend (no Docker). Worker threads
 * run compiled code: `npm run build` first (outside CI the suite is skipped without it).
 * The bash (Docker) cases, crash clean-up among them, are in threaded-envs-docker.test.ts.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createSqlEnvs } from '../../envs/sql/index.js';
import { BENCH_SHARDS } from '../../bench/vec-shards.js';
import { goldText } from '../../src/datasets/index.js';
import type { TaskEnv } from '../../src/env/types.js';
import { ConfigError, EnvStateError, IntercodeError, WorkerCrashedError } from '../../src/errors.js';
import { packagePath } from '../../src/package-path.js';
import { shardRange, startThreadedEnvs } from '../../src/vec/threaded-envs.js';
import { VecEnv, VecStepError, type AutoresetMode, type EnvStep } from '../../src/vec/vec-env.js';

const compiled = existsSync(packagePath('dist', 'src', 'vec', 'env-shard-worker.js'));
const FIXTURE = fileURLToPath(new URL('../fixtures/vec-shards/crashing-shard.mjs', import.meta.url));

function sqliteEnvs(threads: number, count: number): Promise<TaskEnv[]> {
  return threads === 1 ? createSqlEnvs({ embedded: true }, count) : startThreadedEnvs({ threads, count, factory: BENCH_SHARDS.sqlite });
}

/** Env `envId`'s k-th autoreset gets task envId + k + 1: the same whichever env finishes first. */
const rotation = (tasks: TaskEnv['tasks']) => {
  const given = new Map<number, number>();
  return (envId: number) => {
    const k = (given.get(envId) ?? 0) + 1;
    given.set(envId, k);
    return { task: tasks[(envId + k) % tasks.length]! };
  };
};

/** What a step shows, minus its timing. */
const shown = (s: EnvStep) => ({ envId: s.envId, observation: s.observation, reward: s.reward, terminated: s.terminated, truncated: s.truncated, autoreset: s.info.autoreset ?? false, finalObservation: s.info.finalObservation });

async function play(threads: number, autoreset: AutoresetMode): Promise<ReturnType<typeof shown>[]> {
  const envs = await sqliteEnvs(threads, 3);
  const tasks = envs[0]!.tasks.slice(0, 4);
  const next = rotation(tasks);
  const vec = new VecEnv(envs, { autoreset, nextTask: next });
  const seen: ReturnType<typeof shown>[] = [];
  try {
    const first = await vec.reset(undefined, { task: tasks[0]! });
    expect(first.map((r) => r.observation)).toEqual([tasks[0]!.query, tasks[0]!.query, tasks[0]!.query]);
    const current = envs.map(() => tasks[0]!);
    for (let turn = 0; turn < 6; turn++) {
      const actions = current.map((task, i) => (turn % 2 === 0 ? (i === 2 ? 'SELECT 1' : goldText(task)) : 'submit'));
      const batch = await vec.step(actions);
      seen.push(...batch.map(shown));
      if (autoreset === 'disabled') {
        if (turn % 2 === 1) {
          await expect(vec.step(actions)).rejects.toBeInstanceOf(EnvStateError);
          await vec.reset(undefined, { task: tasks[(turn + 1) % tasks.length]! });
          current.fill(tasks[(turn + 1) % tasks.length]!);
        }
      } else if (autoreset === 'next-step' && turn % 2 === 1) {
        const resets = await vec.step(actions.map(() => 'ignored'));
        seen.push(...resets.map(shown));
        for (const r of resets) current[r.envId] = tasks.find((t) => t.query === r.observation)!;
      } else if (autoreset === 'same-step' && turn % 2 === 1) {
        for (const r of batch) current[r.envId] = tasks.find((t) => t.query === r.observation)!;
      }
    }
  } finally {
    await vec.close();
  }
  return seen;
}

describe.skipIf(!compiled && !process.env.CI)('VecEnv over envs in worker threads (embedded SQLite)', () => {
  it('splits envs over threads in contiguous shards differing by at most one', () => {
    expect([0, 1, 2].map((k) => shardRange(8, 3, k))).toEqual([{ first: 0, size: 3 }, { first: 3, size: 3 }, { first: 6, size: 2 }]);
    expect([0, 1].map((k) => shardRange(2, 2, k))).toEqual([{ first: 0, size: 1 }, { first: 1, size: 1 }]);
  });

  for (const autoreset of ['disabled', 'next-step', 'same-step'] as const) {
    it(`${autoreset} autoreset: threads 2 show exactly what threads 1 show (observations, rewards, ends)`, async () => {
      const [one, two] = [await play(1, autoreset), await play(2, autoreset)];
      expect(two).toEqual(one);
      // Gold then submit scores 1; `SELECT 1` then submit does not.
      const ends = one.filter((s) => s.terminated);
      expect(ends.filter((s) => s.envId !== 2).map((s) => s.reward)).toEqual(ends.filter((s) => s.envId !== 2).map(() => 1));
      expect(ends.filter((s) => s.envId === 2).every((s) => s.reward < 1)).toBe(true);
      if (autoreset === 'next-step') expect(one.some((s) => s.autoreset)).toBe(true);
      if (autoreset === 'same-step') expect(ends.every((s) => typeof s.finalObservation === 'string')).toBe(true);
    }, 120_000);
  }

  for (const threads of [1, 2]) {
    it(`threads ${threads}: send/recv returns whichever env finishes first; an env's error names it, typed`, async () => {
      const envs = await sqliteEnvs(threads, 2);
      const vec = new VecEnv(envs, { autoreset: 'disabled' });
      try {
        await vec.reset();
        // A statement that runs a while on env 0, a quick one on env 1.
        vec.send(['WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT count(*) FROM c', 'SELECT 2'], [0, 1]);
        const [first] = await vec.recv();
        expect(first).toMatchObject({ envId: 1, observation: expect.stringContaining('2') });
        expect((await vec.recv())[0]).toMatchObject({ envId: 0, observation: expect.stringContaining('3000000') });
        // The SQL env refuses a step after its episode ended: the error crosses the thread typed.
        await vec.step(['submit', 'submit']);
        const stepAfterEnd = envs[0]!.step('SELECT 1');
        await expect(stepAfterEnd).rejects.toBeInstanceOf(IntercodeError);
        await expect(stepAfterEnd).rejects.toMatchObject({ code: 'ENV_STATE', name: 'EnvStateError' });
        await expect(vec.recv()).rejects.toThrow(/nothing sent/);
      } finally {
        await vec.close();
      }
    }, 60_000);
  }

  it('a worker thread that dies fails its envs\' steps with WorkerCrashedError (VecStepError names the env); the other shard goes on', async () => {
    for (const action of ['THROW', 'EXIT']) {
      const envs = await startThreadedEnvs({ threads: 2, count: 2, factory: { module: FIXTURE, name: 'crashingSqliteEnvs', options: null } });
      const vec = new VecEnv(envs, { autoreset: 'disabled' });
      try {
        await vec.reset();
        vec.send([action], [0]);
        const failure = await vec.recv().catch((error: unknown) => error);
        expect(failure).toBeInstanceOf(VecStepError);
        expect((failure as VecStepError).envId).toBe(0);
        expect((failure as VecStepError).cause).toBeInstanceOf(WorkerCrashedError);
        expect((failure as VecStepError).cause).toMatchObject({ code: 'WORKER_CRASHED', details: { envIds: [0], sandboxesRemoved: 0 } });
        // The dead shard's env keeps failing, typed; the other one still plays.
        await expect(envs[0]!.reset()).rejects.toBeInstanceOf(WorkerCrashedError);
        expect((await vec.reset([1]))[0]!.observation.length).toBeGreaterThan(0);
        expect((await envs[1]!.step('SELECT 3')).observation).toContain('3');
        await expect(vec.step(['SELECT 1', 'SELECT 3'])).rejects.toBeInstanceOf(WorkerCrashedError);
      } finally {
        await vec.close();
      }
    }
  }, 60_000);

  it('a factory that throws fails the start with its error, and bad thread counts are refused', async () => {
    await expect(startThreadedEnvs({ threads: 2, count: 2, factory: { module: FIXTURE, name: 'failingEnvs', options: null } })).rejects.toThrow(/no envs today/);
    await expect(startThreadedEnvs({ threads: 0, count: 2, factory: BENCH_SHARDS.sqlite })).rejects.toBeInstanceOf(ConfigError);
    await expect(startThreadedEnvs({ threads: 1.5, count: 2, factory: BENCH_SHARDS.sqlite })).rejects.toThrow(/--threads/);
  });
});
