/**
 * Bash envs in worker threads, real sandboxes: a lost sandbox is still a truncated step
 * and gold episodes still score 1; a worker thread that dies (an uncaught throw, an exit)
 * fails its envs' steps with a typed error only after every container it made is removed;
 * Ctrl-C's drain of the sandbox registry removes the sandboxes the shards made. Worker
 * threads run compiled code: `npm run build` first.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { goldText } from '../../src/datasets/index.js';
import { WorkerCrashedError } from '../../src/errors.js';
import { packagePath } from '../../src/package-path.js';
import { defaultEndpoint } from '../../src/sandbox/docker/engine.js';
import { THREAD_LABEL } from '../../src/sandbox/docker/labels.js';
import { liveSandboxes } from '../../src/sandbox/lifecycle/registry.js';
import { startThreadedEnvs } from '../../src/vec/threaded-envs.js';
import { VecEnv, VecStepError } from '../../src/vec/vec-env.js';
import { dockerTestFile, requireEngine, skipWithoutEngine, testContainers } from '../setup/docker.js';

const { engine, testRun } = await dockerTestFile();
const compiled = existsSync(packagePath('dist', 'src', 'vec', 'env-shard-worker.js'));
const FIXTURE = fileURLToPath(new URL('../fixtures/vec-shards/crashing-shard.mjs', import.meta.url));
const bashInThreads = (count: number) =>
  startThreadedEnvs({ threads: 2, count, factory: { module: FIXTURE, name: 'crashingBashEnvs', options: null }, engines: [defaultEndpoint()], pool: { minIdle: 1 } });

describe.skipIf(skipWithoutEngine(engine, 'bash envs in worker threads') || (!compiled && !process.env.CI))('bash envs in worker threads', () => {
  beforeAll(() => void requireEngine(engine));
  const containers = async () => testContainers(requireEngine(engine), testRun);
  const threadOf = (c: { Labels: Record<string, string> }) => c.Labels[THREAD_LABEL];

  it('a lost sandbox is a truncated step (never a reward); the next reset gets a new one and the gold scores 1', async () => {
    const envs = await bashInThreads(2);
    const vec = new VecEnv(envs, { autoreset: 'disabled' });
    try {
      const task = envs[0]!.tasks[0]!;
      await vec.reset(undefined, { task });
      const made = await containers();
      expect(new Set(made.map(threadOf)).size).toBe(2);
      await Promise.all(made.map((c) => requireEngine(engine).getContainer(c.Id).remove({ force: true })));
      for (const step of await vec.step(['echo hi', 'echo hi'])) {
        expect(step).toMatchObject({ reward: 0, truncated: true, info: { truncation: { reason: 'sandbox-lost' } } });
      }
      await vec.reset(undefined, { task });
      expect((await vec.step([goldText(task), goldText(task)])).every((s) => !s.truncated)).toBe(true);
      expect((await vec.step(['submit', 'submit'])).map((s) => s.reward)).toEqual([1, 1]);
    } finally {
      await vec.close();
    }
    expect(await containers()).toEqual([]);
  }, 240_000);

  it('a worker thread that dies (uncaught throw, exit) fails its env with WorkerCrashedError after its containers are removed; the other shard plays on', async () => {
    const envs = await bashInThreads(2);
    const vec = new VecEnv(envs, { autoreset: 'disabled' });
    try {
      await vec.reset();
      const before = await containers();
      const threads = [...new Set(before.map(threadOf))];
      expect(threads).toHaveLength(2);
      for (const [envId, action] of [[0, 'THROW'], [1, 'EXIT']] as const) {
        vec.send([action], [envId]);
        const failure = await vec.recv().catch((error: unknown) => error);
        expect(failure).toBeInstanceOf(VecStepError);
        expect((failure as VecStepError).envId).toBe(envId);
        const crashed = (failure as VecStepError).cause as WorkerCrashedError;
        expect(crashed).toBeInstanceOf(WorkerCrashedError);
        // By the time the caller hears of it, nothing the dead thread made is left.
        const thread = String(crashed.details.threadId);
        expect(threads).toContain(thread);
        expect((await containers()).filter((c) => threadOf(c) === thread).map((c) => c.Id)).toEqual([]);
        expect(crashed.details.sandboxesRemoved).toBeGreaterThanOrEqual(1);
        if (envId === 0) expect((await envs[1]!.step('echo still here')).observation).toBe('still here\n');
      }
    } finally {
      await vec.close();
    }
    expect(await containers()).toEqual([]);
  }, 240_000);

  // Last in the file: the registry stays in its draining state afterwards, as in a process that is exiting.
  it('Ctrl-C (the registry drain the signal handler runs) removes every sandbox the shards made, spares included', async () => {
    const envs = await bashInThreads(4);
    const vec = new VecEnv(envs, { autoreset: 'disabled' });
    try {
      await vec.reset();
      expect((await containers()).length).toBeGreaterThanOrEqual(4);
      const report = await liveSandboxes.drain(30_000);
      expect(report.pending).toBe(0);
      expect(await containers()).toEqual([]);
    } finally {
      await vec.close().catch(() => undefined);
    }
  }, 240_000);
});
