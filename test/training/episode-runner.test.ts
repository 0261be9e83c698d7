/**
 * VecEpisodeRunner: rollouts in job order through the VecEnv, and a lost sandbox replayed
 * rather than counted (a truncated episode has no reward to learn from or to score).
 */
import { describe, expect, it } from 'vitest';
import type { StepResult } from '../../src/env/types.js';
import { SandboxError } from '../../src/errors.js';
import { GoldPolicy } from '../../src/policy/index.js';
import { VecEnv } from '../../src/vec/index.js';
import { VecEpisodeRunner } from '../../training/loops/episode-runner.js';
import { ToyEnv, TOY_TASKS } from './fixtures/toy-env.js';

/** A ToyEnv whose sandbox is lost on the first step of the first `losses` episodes of task toy-0. */
class LosingEnv extends ToyEnv {
  private current = '';
  constructor(private readonly lost: { remaining: number }) {
    super(undefined, 2);
  }
  override async reset(options: Parameters<ToyEnv['reset']>[0] = {}) {
    const first = await super.reset(options);
    this.current = first.info.task!.id;
    return first;
  }
  override async step(action: string): Promise<StepResult> {
    if (this.current === 'toy-0' && this.lost.remaining > 0) {
      this.lost.remaining -= 1;
      this.current = '';
      return { observation: 'lost', reward: 0, terminated: false, truncated: true, info: { actionExecuted: false, exitCode: null, durationMs: 0, events: [], truncation: { reason: 'sandbox-lost', message: 'container killed' } } };
    }
    return super.step(action);
  }
}

const gold = new GoldPolicy(({ task }) => [task.gold as string, 'submit']);
const jobs = TOY_TASKS.slice(0, 6).map((task) => ({ task, policy: gold }));

describe('VecEpisodeRunner', () => {
  it('returns the rollouts in job order, replaying an episode whose sandbox was lost, with a note', async () => {
    const lost = { remaining: 2 };
    const notes: string[] = [];
    const runner = new VecEpisodeRunner('toy', new VecEnv([new LosingEnv(lost), new LosingEnv(lost), new LosingEnv(lost)], { autoreset: 'disabled' }), (line) => notes.push(line));
    const finished: number[] = [];
    const rollouts = await runner.play(jobs, { turnLimit: 3, onEpisode: (done) => finished.push(done) });
    expect(rollouts.map((r) => r.task.id)).toEqual(jobs.map((j) => j.task.id));
    expect(rollouts.map((r) => [r.reward, r.truncated])).toEqual(jobs.map(() => [1, false]));
    expect(notes).toHaveLength(2);
    expect(notes[0]).toMatch(/task toy-0: sandbox lost \(container killed\); playing the episode again \(attempt 2 of 3\)/);
    expect(finished).toEqual([1, 2, 3, 4, 5, 6]);
    await runner.close();
  });

  it('stops with a SandboxError when one episode loses its sandbox three times in a row', async () => {
    const runner = new VecEpisodeRunner('toy', new VecEnv([new LosingEnv({ remaining: 3 })], { autoreset: 'disabled' }));
    await expect(runner.play(jobs.slice(0, 2), { turnLimit: 3 })).rejects.toSatisfy(
      (error) => error instanceof SandboxError && /task toy-0: the sandbox was lost in 3 attempts in a row \(last: container killed\)/.test(error.message),
    );
  });
});
