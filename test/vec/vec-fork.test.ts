/**
 * VecEnv.fork(i, n) without Docker: envs whose episode is a list of actions, checkpointed as
 * a copy of it. The slots must be free ones, continue the source's episode, and the handle
 * must be released.
 */
import { describe, expect, it } from 'vitest';
import type { Task } from '../../src/datasets/index.js';
import type { EpisodeCheckpoint } from '../../src/env/checkpoint/index.js';
import type { CheckpointableEnv, ResetResult, Score, StepResult } from '../../src/env/types.js';
import { EnvStateError } from '../../src/errors.js';
import { VecEnv } from '../../src/vec/index.js';

const TASKS: Task[] = [{ index: 0, id: 't0', query: 'q0', gold: 'g', metadata: {} }];

class ListEnv implements CheckpointableEnv {
  readonly id = 'test/list-v0';
  readonly tasks = TASKS;
  actions: string[] = [];
  static released = 0;

  async reset(): Promise<ResetResult> {
    this.actions = [];
    return { observation: 'q0', info: { task: TASKS[0]! } };
  }
  async step(action: string): Promise<StepResult> {
    this.actions.push(action);
    return { observation: this.actions.join(','), reward: 0, terminated: false, truncated: false, info: { actionExecuted: true, exitCode: 0, durationMs: 0, events: [] } };
  }
  async peekScore(): Promise<Score> {
    return { reward: 0, parts: {}, details: {} };
  }
  async checkpoint(): Promise<EpisodeCheckpoint> {
    return { id: 'c', envId: this.id, info: { steps: this.actions.length, layer: { paths: 0, bytes: 0, archiveBytes: 0 }, dropped: { processes: [], shellValues: [] }, durationMs: 0 }, state: { actions: [...this.actions] } } as unknown as EpisodeCheckpoint;
  }
  async restore(checkpoint: EpisodeCheckpoint): Promise<void> {
    this.actions = [...(checkpoint.state as unknown as { actions: string[] }).actions];
  }
  releaseCheckpoint(): void {
    ListEnv.released++;
  }
  async close(): Promise<void> {}
}

describe('VecEnv.fork', () => {
  it('continues env i in the n lowest free slots, which then step from its state; the handle is released', async () => {
    const envs = [0, 1, 2, 3].map(() => new ListEnv());
    const vec = new VecEnv(envs, { autoreset: 'disabled' });
    await vec.reset([0, 2]);
    vec.send(['a'], [0]);
    await vec.recv(1);
    const released = ListEnv.released;
    expect(await vec.fork(0, 2)).toEqual([1, 3]);
    expect(ListEnv.released).toBe(released + 1);
    vec.send(['b', 'c'], [1, 3]);
    const steps = await vec.recv(2);
    expect(steps.map((s) => [s.envId, s.observation]).sort()).toEqual([[1, 'a,b'], [3, 'a,c']]);
    expect(envs[0]!.actions).toEqual(['a']);
  });

  it('refuses without enough free slots, or without a live episode in env i', async () => {
    const vec = new VecEnv([0, 1, 2].map(() => new ListEnv()), { autoreset: 'disabled' });
    await expect(vec.fork(0, 1)).rejects.toThrow(EnvStateError);
    await vec.reset([0, 1]);
    await expect(vec.fork(0, 2)).rejects.toThrow(/needs 2 free slots; 1 are free/);
  });
});
