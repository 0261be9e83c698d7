/**
 * The figures train's metric records give of a set of rollouts: an episode that ended
 * truncated (its verifier gave no reward, the turn limit without a submit) is left out of the
 * mean reward and counted by reason, never averaged in as 0. The rollouts are built here as
 * the task env ends such episodes (test/task/task-env.test.ts plays them in Docker).
 */
import { describe, expect, it } from 'vitest';
import type { StepInfo } from '../../src/env/types.js';
import type { Rollout } from '../../src/policy/index.js';
import { notScoredOf, rolloutOutcome } from '../../training/loops/rollout-outcome.js';

const TASK = { index: 0, id: 't', query: 'q', gold: 'g', metadata: {} };
const info = (truncation?: StepInfo['truncation']): StepInfo => ({ actionExecuted: true, exitCode: 0, durationMs: 1, events: [], ...(truncation ? { truncation } : {}) });
const scored = (reward: number): Rollout => ({ task: TASK, turns: [{ action: 'submit', observation: '', reward, info: info() }], reward, terminated: true, truncated: false });
const cut = (reason: 'reward-missing' | 'verifier-timeout', message: string): Rollout => ({
  task: TASK,
  turns: [{ action: 'submit', observation: '', reward: 0, info: info({ reason, message }) }],
  reward: 0,
  terminated: false,
  truncated: true,
  truncation: message,
});
const turnLimit: Rollout = { task: TASK, turns: [{ action: 'ls', observation: '', reward: 0, info: info() }], reward: 0, terminated: false, truncated: true, truncation: 'turn limit 1 reached' };

describe('rolloutOutcome and notScoredOf', () => {
  it('leave truncated rollouts out of the mean and count them by reason', () => {
    const rollouts = [scored(1), scored(0.5), cut('reward-missing', 'no reward file'), cut('verifier-timeout', 'past 2 s'), cut('reward-missing', 'no reward file'), turnLimit];
    expect(rolloutOutcome(rollouts)).toEqual({ successRate: 1 / 6, meanReward: 0.75 });
    expect(notScoredOf(rollouts)).toEqual({ notScored: 4, notScoredByReason: { 'reward-missing': 2, 'turn-limit': 1, 'verifier-timeout': 1 } });
  });

  it('no mean when nothing was scored; nothing to count when all were', () => {
    expect(rolloutOutcome([cut('reward-missing', 'x')])).toEqual({ successRate: 0 });
    expect(notScoredOf([scored(0), scored(1)])).toEqual({});
    expect(rolloutOutcome([scored(0), scored(1)])).toEqual({ successRate: 0.5, meanReward: 0.5 });
  });
});
