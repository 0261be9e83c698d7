/**
 * The episode log as a wrapper, without Docker: it writes one InterCode log per episode that a
 * step ends, from the env's own account (so a restored or forked episode's log holds the steps
 * before its checkpoint), passes checkpoints and forks on, and can be seen through.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Task } from '../../src/datasets/index.js';
import type { EpisodeCheckpoint } from '../../src/env/checkpoint/index.js';
import { EpisodeLedger, type EpisodeSnapshot } from '../../src/env/episode-ledger.js';
import { EpisodeLogWriter, writeEpisodeLogs, type EpisodeRecordingEnv } from '../../src/env/episode-log-writer.js';
import { TaskEnvWrapper, unwrapped } from '../../src/env/task-env-wrapper.js';
import { isCheckpointable, isForkable, type ResetResult, type StepResult, type TaskEnv } from '../../src/env/types.js';
import { ConfigError, TrajectoryError } from '../../src/errors.js';
import type { EpisodeLog } from '../../src/trajectory/index.js';

const TASK: Task = { index: 2, id: '2', query: 'count the files', gold: 'ls | wc -l', metadata: {} };
const FIGURES = { actionExecuted: true, exitCode: 0, durationMs: 0, events: [] };

/** An env over a ledger: `submit` scores 1, `lose` cuts the episode off, any other action is recorded. */
class LedgerEnv implements EpisodeRecordingEnv {
  readonly id = 'test/ledger-v0';
  readonly logName = 'ic_test';
  readonly tasks = [TASK];
  private readonly ledger = new EpisodeLedger();

  constructor(private readonly task: Task | null = TASK) {}

  async reset(): Promise<ResetResult> {
    this.ledger.begin(this.task, this.task?.query ?? '');
    return { observation: this.task?.query ?? '', info: { task: this.task } };
  }

  async step(action: string): Promise<StepResult> {
    if (action === 'submit') {
      this.ledger.end(1, { reward: { score: 1 } });
      return { observation: this.ledger.lastObservation, reward: 1, terminated: true, truncated: false, info: FIGURES };
    }
    if (action === 'lose') {
      this.ledger.end(null, { truncated: 'the sandbox was lost' });
      return { observation: 'lost', reward: 0, terminated: false, truncated: true, info: { ...FIGURES, truncation: { reason: 'sandbox-lost', message: 'the sandbox was lost' } } };
    }
    this.ledger.record(action, `ran ${action}`);
    return { observation: `ran ${action}`, reward: 0, terminated: false, truncated: false, info: FIGURES };
  }

  async peekScore() {
    return { reward: 0, parts: {}, details: {} };
  }

  endedEpisode() {
    return this.ledger.endedEpisode;
  }

  async checkpoint(): Promise<EpisodeCheckpoint> {
    return { id: 'c', envId: this.id, info: { steps: this.ledger.steps.length, layer: { paths: 0, bytes: 0, archiveBytes: 0 }, dropped: { processes: [], shellValues: [] }, durationMs: 0 }, state: this.ledger.snapshot() };
  }

  async restore(checkpoint: EpisodeCheckpoint): Promise<void> {
    this.ledger.continueFrom(checkpoint.state as EpisodeSnapshot);
  }

  releaseCheckpoint(): void {}

  async fork(n: number): Promise<TaskEnv[]> {
    const checkpoint = await this.checkpoint();
    return Promise.all(
      Array.from({ length: n }, async () => {
        const child = new LedgerEnv();
        await child.restore(checkpoint);
        return child;
      }),
    );
  }

  async close(): Promise<void> {
    this.ledger.stop();
  }
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function newDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'episode-log-writer-'));
  dirs.push(dir);
  return dir;
}
const logsIn = (dir: string): EpisodeLog[] => readdirSync(dir).sort().map((file) => JSON.parse(readFileSync(join(dir, file), 'utf8')) as EpisodeLog);

describe('EpisodeLogWriter', () => {
  it('writes one InterCode log when a step ends the episode, from the env’s own account, and none before', async () => {
    const dir = newDir();
    const env = writeEpisodeLogs(new LedgerEnv(), dir);
    await env.reset();
    await env.step('ls');
    expect(readdirSync(dir)).toEqual([]);
    expect(await env.step('submit')).toMatchObject({ reward: 1, terminated: true });
    expect(readdirSync(dir)).toHaveLength(1);
    expect(readdirSync(dir)[0]).toMatch(/^ic_test-2-\d{8}T\d{9}Z\.json$/);
    expect(logsIn(dir)).toEqual([
      { environment: 'ic_test', query_idx: 2, query: 'count the files', gold: 'ls | wc -l', reward: 1, trajectory: [{ action: 'ls', observation: 'ran ls' }], info: { reward: { score: 1 } } },
    ]);
  });

  it('logs a cut-off episode with reward null; none for an episode left by a reset or a close, nor one without a task', async () => {
    const dir = newDir();
    const env = writeEpisodeLogs(new LedgerEnv(), dir);
    await env.reset();
    await env.step('pwd');
    await env.reset();
    await env.step('ls');
    await env.step('lose');
    expect(logsIn(dir).map((log) => [log.reward, log.trajectory.length, log.info])).toEqual([[null, 1, { truncated: 'the sandbox was lost' }]]);
    await env.reset();
    await env.step('ls');
    await env.close();
    const toolMode = writeEpisodeLogs(new LedgerEnv(null), dir);
    await toolMode.reset();
    await toolMode.step('submit');
    expect(readdirSync(dir)).toHaveLength(1);
  });

  it("a checkpoint restored in another env logs the steps taken before it, then that env's", async () => {
    const dir = newDir();
    const first = writeEpisodeLogs(new LedgerEnv(), dir);
    await first.reset();
    await first.step('before');
    const checkpoint = await first.checkpoint();
    const second = writeEpisodeLogs(new LedgerEnv(), dir);
    await second.reset();
    await second.step('dropped');
    await second.restore(checkpoint);
    await second.step('after');
    await second.step('submit');
    expect(logsIn(dir).map((log) => log.trajectory.map((s) => s.action))).toEqual([['before', 'after']]);
  });

  it("forks write their own logs into the same folder, each with the parent's steps before the fork", async () => {
    const dir = newDir();
    const parent = writeEpisodeLogs(new LedgerEnv(), dir);
    await parent.reset();
    await parent.step('shared');
    const children = await parent.fork(2);
    expect(children.every((child) => child instanceof EpisodeLogWriter)).toBe(true);
    await children[0]!.step('left');
    await children[0]!.step('submit');
    await children[1]!.step('lose');
    await parent.step('submit');
    expect(logsIn(dir).map((log) => log.trajectory.map((s) => s.action)).sort()).toEqual([['shared'], ['shared'], ['shared', 'left']]);
  });

  it('passes checkpoints and forks on, and is seen through by unwrapped()', () => {
    const inner = new LedgerEnv();
    const writer = writeEpisodeLogs(inner, newDir());
    expect([isCheckpointable(writer), isForkable(writer)]).toEqual([true, true]);
    expect(unwrapped(new TaskEnvWrapper(writer))).toBe(inner);
    expect(unwrapped(inner)).toBe(inner);
  });

  it('refuses an env that keeps no account of its episodes, naming --trajectories', () => {
    const plain: TaskEnv = { id: 'plain', tasks: [], reset: async () => ({ observation: '', info: { task: null } }), step: async () => ({ observation: '', reward: 0, terminated: true, truncated: false, info: FIGURES }), peekScore: async () => ({ reward: 0, parts: {}, details: {} }), close: async () => undefined };
    expect(() => writeEpisodeLogs(plain, newDir())).toThrow(ConfigError);
    expect(() => writeEpisodeLogs(plain, newDir())).toThrow(/--trajectories/);
  });

  it('a log that cannot be written fails the step that ended the episode (TrajectoryError), not silently', async () => {
    const file = join(newDir(), 'not-a-folder');
    writeFileSync(file, '');
    const env = writeEpisodeLogs(new LedgerEnv(), file);
    await env.reset();
    await expect(env.step('submit')).rejects.toBeInstanceOf(TrajectoryError);
  });
});
