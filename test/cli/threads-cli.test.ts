/**
 * `collect --threads`, `train --threads` and `run --threads`, run as a user runs them (the CLI in a child
 * process): the envs stepped in worker threads give the same episodes and the same trained
 * run as on the main thread (embedded SQLite, no Docker); bash envs in two threads on a real
 * engine play gold episodes at 1 and leave no sandbox; bad combinations are refused naming
 * --threads. Worker threads run compiled code: `npm run build` first (outside CI the suite
 * is skipped without it).
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-path.js';
import { THREAD_LABEL } from '../../src/sandbox/docker/labels.js';
import { intercodeFromSource as intercode } from '../setup/cli.js';
import { dockerTestFile, requireEngine, skipWithoutEngine, testContainers } from '../setup/docker.js';

const { engine, testRun } = await dockerTestFile();
const compiled = existsSync(packagePath('dist', 'envs', 'plugin-shards.js'));

/** A demonstration file's episodes, in a stable order, without anything that depends on timing. */
function episodes(file: string): unknown[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as { task_id: string; actions: string[]; rewards: number[]; reward: number; terminated: boolean; truncated: boolean; observations: string[] })
    .map(({ task_id, actions, rewards, reward, terminated, truncated, observations }) => ({ task_id, actions, rewards, reward, terminated, truncated, observations }))
    .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
}

describe.skipIf(!compiled && !process.env.CI)('--threads on collect and train', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'intercode-threads-'));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('collect in 2 threads writes the episodes collect on the main thread writes (embedded SQLite)', async () => {
    const runs = [];
    for (const threads of ['1', '2']) {
      const out = join(dir, `sql-${threads}.jsonl`);
      const run = await intercode(['collect', '--env', 'sql', '--embedded', '--threads', threads, '--parallel', '4', '--out', out, '--json']);
      expect(run.stderr).not.toMatch(/intercode: /);
      expect(run.code).toBe(0);
      runs.push({ summary: JSON.parse(run.stdout) as { episodes: number; solved: number }, stderr: run.stderr, episodes: episodes(out) });
    }
    const [one, two] = runs;
    expect(two!.stderr).toContain('4 env(s) in 2 worker threads');
    expect(one!.stderr).not.toContain('worker threads');
    expect(one!.summary.episodes).toBeGreaterThan(10);
    expect(two!.summary).toMatchObject({ episodes: one!.summary.episodes, solved: one!.summary.episodes });
    expect(two!.episodes).toEqual(one!.episodes);
  }, 120_000);

  it('train in 2 threads gives the run train on the main thread gives: the same summary and the same metrics', async () => {
    const demos = join(dir, 'demos.jsonl');
    expect((await intercode(['collect', '--env', 'sql', '--embedded', '--out', demos, '--json'])).code).toBe(0);
    const runs = [];
    for (const threads of ['1', '2']) {
      const checkpoints = join(dir, `checkpoints-${threads}`);
      const run = await intercode([
        'train', '--env', 'sql', '--embedded', '--demos', demos, '--run', 'r', '--checkpoints', checkpoints, '--threads', threads, '--parallel', '4',
        '--bc-epochs', '2', '--pg-iterations', '2', '--pg-episodes', '8', '--eval-every', '1', '--json',
      ]);
      expect(run.stderr).not.toMatch(/intercode: /);
      expect(run.code).toBe(0);
      const { envStepsPerSec: _rate, elapsedSec: _elapsed, run: _dir, ...summary } = JSON.parse(run.stdout) as Record<string, unknown>;
      const metrics = readFileSync(join(checkpoints, 'r', 'metrics.jsonl'), 'utf8')
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => {
          const { elapsedSec: _e, envStepsPerSec: _s, time: _t, ...kept } = JSON.parse(line) as Record<string, unknown>;
          return kept;
        });
      runs.push({ summary, metrics, stderr: run.stderr });
    }
    expect(runs[1]!.stderr).toContain('in 2 worker threads');
    expect(runs[1]!.metrics.length).toBeGreaterThan(3);
    expect(runs[1]!.summary).toEqual(runs[0]!.summary);
    expect(runs[1]!.metrics).toEqual(runs[0]!.metrics);
  }, 180_000);

  it('run in 2 threads scores every task as run on the main thread does (embedded SQLite, no engine: sandboxKind none), in the same order', async () => {
    const figures = [];
    for (const threads of ['1', '2']) {
      // No engine anywhere: an env that needs none must not need one to report its run.
      const run = await intercode(['run', 'sql', '--embedded', '--threads', threads, '--parallel', '4', '--run-dir', join(dir, `run-${threads}`), '--json'], { env: { DOCKER_HOST: 'unix:///nonexistent/intercode-no-engine.sock' } });
      expect(run.stderr).not.toMatch(/intercode: /);
      expect(run.code).toBe(0);
      figures.push({ json: JSON.parse(run.stdout) as { episodes: number; solved: number; threads?: number; sandboxKind?: string; tasks: unknown[] }, stderr: run.stderr });
    }
    const [one, two] = figures;
    expect(one!.json).toMatchObject({ sandboxKind: 'none' });
    expect(one!.json.threads).toBeUndefined();
    expect(two!.json).toMatchObject({ threads: 2, episodes: one!.json.episodes, solved: one!.json.solved });
    expect(two!.json.sandboxKind).toBeUndefined();
    expect(two!.stderr).toContain('4 env(s) in 2 worker threads');
    expect(one!.json.episodes).toBeGreaterThan(10);
    expect(two!.json.tasks).toEqual(one!.json.tasks);
  }, 120_000);

  it.each([
    [['--threads', '0'], 'must be a positive'],
    [['--threads', '2', '--sandboxes', 'fresh'], 'use it with --sandboxes pooled'],
    [['--threads', '2', '--engine', 'k8s'], 'needs Docker engines'],
    [['--threads', '2', '--policy', 'llm:m', '--base-url', 'http://127.0.0.1:9'], 'an llm: policy waits on its model'],
  ])('collect %j is refused naming --threads', async (flags, message) => {
    const run = await intercode(['collect', '--env', 'sql', '--embedded', '--out', join(dir, 'refused.jsonl'), ...flags]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--threads');
    expect(run.stderr).toContain(message);
  }, 60_000);

  describe.skipIf(skipWithoutEngine(engine, 'collect --threads on bash'))('bash, real sandboxes', () => {
    it('collect --env bash --threads 2: gold episodes at 1, sandboxes made in both threads, none left at exit', async () => {
      const docker = requireEngine(engine);
      const out = join(dir, 'bash.jsonl');
      const threads = new Set<string>();
      const running = intercode(['collect', '--env', 'bash', '--threads', '2', '--parallel', '2', '--episodes', '6', '--keep-warm', '0', '--out', out, '--json']);
      let ended = false;
      void running.then(() => (ended = true));
      while (!ended) {
        for (const container of await testContainers(docker, testRun)) threads.add(container.Labels[THREAD_LABEL] ?? 'main');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const run = await running;
      expect(run.stderr).not.toMatch(/intercode: /);
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({ episodes: 6, solved: 6 });
      expect(episodes(out).every((episode) => (episode as { reward: number }).reward === 1)).toBe(true);
      // Every sandbox was made in a worker thread, and both threads made some.
      expect(threads.size).toBe(2);
      expect(threads.has('main')).toBe(false);
      expect(await testContainers(docker, testRun)).toEqual([]);
    }, 240_000);
  });
});
