/**
 * The figures `train` ends with: an eval record whose episodes all ended truncated (no
 * verifier reward) has no mean reward, and the outcome says so (null, "n/a", counted by
 * reason) instead of a mean reward of 0.
 */
import { describe, expect, it } from 'vitest';
import { describeMeanReward, outcomeOf } from '../../training/loops/outcome.js';
import type { MetricRecord } from '../../training/run/run-files.js';

const evalRecord = (fields: Partial<MetricRecord>): MetricRecord => ({ iteration: 5, phase: 'eval', successRate: 0, heldOutSuccessRate: 0, episodes: 3, elapsedSec: 1, ...fields });

describe('outcomeOf', () => {
  it('gives no mean reward when no episode was scored, and counts those not scored by reason', () => {
    const outcome = outcomeOf(evalRecord({ notScored: 3, notScoredByReason: { 'reward-missing': 3 } }));
    expect(outcome).toEqual({ train: 0, heldOut: 0, trainMeanReward: null, heldOutMeanReward: null, episodes: 3, notScored: 3, notScoredByReason: { 'reward-missing': 3 } });
    expect(describeMeanReward(outcome)).toBe('mean reward n/a (0 scored, 3 not scored (reward-missing 3))');
  });

  it('gives the means of the scored episodes, with how many were left out', () => {
    const outcome = outcomeOf(evalRecord({ successRate: 0.5, meanReward: 0.75, heldOutSuccessRate: 1, heldOutMeanReward: 1, episodes: 4, notScored: 1, notScoredByReason: { 'verifier-timeout': 1 } }));
    expect(outcome).toMatchObject({ trainMeanReward: 0.75, heldOutMeanReward: 1, notScored: 1 });
    expect(describeMeanReward(outcome)).toBe('mean reward train 0.750, held-out 1.000 (3 scored, 1 not scored (verifier-timeout 1))');
  });

  it('says nothing of not-scored episodes when every one was scored', () => {
    const outcome = outcomeOf(evalRecord({ successRate: 1, meanReward: 1, heldOutMeanReward: 0.5, episodes: 2 }));
    expect(outcome).toMatchObject({ trainMeanReward: 1, heldOutMeanReward: 0.5, notScored: 0, notScoredByReason: {} });
    expect(describeMeanReward(outcome)).toBe('mean reward train 1.000, held-out 0.500');
  });

  it('gives no figures for a phase the run never reached', () => {
    expect(outcomeOf(undefined)).toEqual({ train: 0, heldOut: 0, trainMeanReward: null, heldOutMeanReward: null, episodes: 0, notScored: 0, notScoredByReason: {} });
  });
});
