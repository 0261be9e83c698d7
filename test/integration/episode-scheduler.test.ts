/**
 * The episode scheduler in real sandboxes: `intercode run bash` end to end (pooled by default,
 * `--sandboxes fresh`, the gold cache on disk across processes, `setupSec`/`episodesPerSec`,
 * bad flags), and a hostile agent whose leftovers must not reach the gold verification (which
 * runs in new sandboxes, and whose pool's sandboxes an episode wrote to are replaced, not restored).
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILTIN_BASH_TASKS, createBashEnvs } from '../../envs/bash/index.js';
import { goldText } from '../../src/datasets/index.js';
import { EpisodeScheduler } from '../../src/scheduler/index.js';
import { makeTempDir } from '../datasets/tmp-files.js';
import { dockerTestFile, requireEngine, skipWithoutEngine, testContainers } from '../setup/docker.js';
import { intercodeFromSource } from '../setup/cli.js';

const { testRun, engine } = await dockerTestFile();

const intercode = intercodeFromSource;

interface RunJson {
  episodes: number;
  solved: number;
  elapsedSec: number;
  setupSec: number;
  episodesPerSec: number;
  parallel: number;
  sandboxes: string;
}

const TASKS = 6;

describe.skipIf(skipWithoutEngine(engine, 'episode scheduler tests'))('the episode scheduler', () => {
  let data: Awaited<ReturnType<typeof makeTempDir>>;
  let tasksFile: string;

  beforeAll(async () => {
    requireEngine(engine);
    data = await makeTempDir();
    const tasks = JSON.parse(await readFile(BUILTIN_BASH_TASKS, 'utf8')) as unknown[];
    tasksFile = await data.write('tasks.json', JSON.stringify(tasks.slice(0, TASKS)));
  });

  afterAll(async () => {
    await data?.remove();
  });

  it('run bash: pooled by default, golds verified once and trusted by the next process, set-up and throughput reported', async () => {
    const golds = join(data.dir, 'golds');
    const args = ['run', 'bash', '--data', tasksFile, '--parallel', '2', '--gold-cache-dir', golds, '--json'];
    const first = await intercode(args);
    expect(first.code, first.stderr).toBe(0);
    const one = JSON.parse(first.stdout) as RunJson;
    expect(one).toMatchObject({ episodes: TASKS, solved: TASKS, parallel: 2, sandboxes: 'pooled' });
    expect(one.setupSec).toBeGreaterThan(0);
    expect(one.setupSec).toBeLessThan(one.elapsedSec);
    expect(one.episodesPerSec).toBeGreaterThan(0);
    expect(first.stderr).toMatch(/episode scheduler: 2 env\(s\) on a warm pool/);
    const entries = await readdir(golds);
    expect(entries.length).toBe(TASKS);
    const entry = JSON.parse(await readFile(join(golds, entries[0]!), 'utf8')) as { stable: boolean; key: { imageId: string } };
    expect(entry.stable).toBe(true);
    expect(entry.key.imageId).toMatch(/^sha256:/);

    const second = await intercode([...args, '--trajectories', join(data.dir, 'logs')]);
    expect(second.code, second.stderr).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({ episodes: TASKS, solved: TASKS });
    const logs = await readdir(join(data.dir, 'logs'));
    expect(logs).toHaveLength(TASKS);
    for (const name of logs) {
      const log = JSON.parse(await readFile(join(data.dir, 'logs', name), 'utf8')) as { info: { gold_cached: boolean } };
      expect(log.info.gold_cached, name).toBe(true);
    }
    expect(await testContainers(requireEngine(engine), testRun)).toEqual([]);
  }, 300_000);

  it('run bash --sandboxes fresh: a new sandbox per episode, the same rewards', async () => {
    const result = await intercode(['run', 'bash', '--data', tasksFile, '--parallel', '2', '--sandboxes', 'fresh', '--no-gold-cache', '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ episodes: TASKS, solved: TASKS, sandboxes: 'fresh' });
    expect(await testContainers(requireEngine(engine), testRun)).toEqual([]);
  }, 300_000);

  it('refuses an unknown --sandboxes and --gold-cache-dir with --no-gold-cache, naming the flag', async () => {
    const bad = await intercode(['run', 'bash', '--data', tasksFile, '--sandboxes', 'warm']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--sandboxes must be one of pooled, fresh, got "warm"/);
    const both = await intercode(['run', 'bash', '--data', tasksFile, '--no-gold-cache', '--gold-cache-dir', join(data.dir, 'x')]);
    expect(both.code).not.toBe(0);
    expect(both.stderr).toMatch(/--gold-cache-dir cannot go with --no-gold-cache/);
  }, 120_000);

  it('a hostile episode leaves nothing the next gold verification in the same pool can see: its stored outcome is a fresh sandbox\'s', async () => {
    // What the gold prints covers every place an agent writes: the testbed (names, sizes, modes,
    // contents), /root, /tmp, /dev/shm; it changes a file so the reward's hash part counts. (Not the
    // process count: two new sandboxes can differ there for a moment, so the gold would be unstable;
    // leftover processes are checked by the restore tests and the pooled CTF test.)
    const gold =
      "find /testbed /root /tmp /dev/shm -printf '%p %s %m\\n' | LC_ALL=C sort | md5sum; " +
      'find /testbed -type f -exec md5sum {} + | LC_ALL=C sort | md5sum; echo note > /testbed/note.txt';
    const file = await data.write('hostile.json', JSON.stringify([{ query: 'describe the machine', gold }]));
    const pooledDir = join(data.dir, 'golds-pooled');
    const freshDir = join(data.dir, 'golds-fresh');

    const envs = await createBashEnvs({ data: file, goldCacheDir: pooledDir }, 1);
    // One spare: the episode's sandbox and one other; the verification's two runs take new sandboxes of their own.
    const pooled = new EpisodeScheduler(envs, { pool: { pool: { minIdle: 1 } } });
    const task = envs[0]!.tasks[0]!;
    try {
      await pooled.forEach([0, 1, 2], async (env) => {
        await env.reset({ task });
        for (const action of [
          'echo evil > /testbed/evil.txt; echo changed >> /testbed/README.md; chmod 777 /testbed; mkdir -p /root/.x /dev/shm/x; echo x > /tmp/x',
          'nohup setsid bash -c "sleep 1; echo late > /testbed/late.txt; touch /root/late" >/dev/null 2>&1 &',
          'python3 -c "import os; os.fork() or __import__(\'time\').sleep(60)" >/dev/null 2>&1 &',
        ]) {
          await env.step(action);
        }
        await env.step('skip');
      });
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const rewards: number[] = [];
      await pooled.forEach([0], async (env) => {
        await env.reset({ task });
        await env.step(goldText(task));
        rewards.push((await env.step('submit')).reward);
      });
      expect(rewards).toEqual([1]);
      // Every episode wrote files: none of its sandboxes was restored in place (docs/fidelity.md), each was replaced.
      expect(pooled.stats()!.restored).toBe(0);
      expect(pooled.stats()!.created).toBeGreaterThanOrEqual(4);
    } finally {
      await pooled.close();
    }

    const freshEnvs = await createBashEnvs({ data: file, goldCacheDir: freshDir }, 1);
    const fresh = new EpisodeScheduler(freshEnvs, { sandboxes: 'fresh' });
    try {
      await fresh.forEach([0], async (env) => {
        await env.reset({ task });
        await env.step('submit');
      });
    } finally {
      await fresh.close();
    }
    const outcomeIn = async (dir: string) => {
      const [name] = await readdir(dir);
      return (JSON.parse(await readFile(join(dir, name!), 'utf8')) as { stable: boolean; outcome: unknown }).outcome;
    };
    const fromPool = await outcomeIn(pooledDir);
    expect(fromPool).toBeDefined();
    expect(fromPool).toEqual(await outcomeIn(freshDir));
    expect(JSON.stringify(fromPool)).not.toMatch(/evil|late/);
  }, 300_000);
});
