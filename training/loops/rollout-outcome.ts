import { countByReason, meanOfScored, unscoredRollout, type Rollout } from '../../src/policy/index.js';
import { isSolved } from '../../src/scoring/solved.js';

/** What a metric record says of a set of rollouts (see {@link rolloutOutcome}). */
export interface RolloutOutcome {
  /** Solved over all rollouts (a not-scored one did not solve its task). */
  successRate: number;
  /** Mean reward of the scored rollouts; absent when none was scored. */
  meanReward?: number;
}

/** The rollouts that ended truncated (never scored), counted by reason; empty when there are none. */
export function notScoredOf(rollouts: readonly Rollout[]): { notScored?: number; notScoredByReason?: Record<string, number> } {
  const unscored = rollouts.flatMap((r) => {
    const cut = unscoredRollout(r);
    return cut ? [cut] : [];
  });
  return unscored.length === 0 ? {} : { notScored: unscored.length, notScoredByReason: countByReason(unscored) };
}

/**
 * Success rate and mean reward of a set of rollouts. A rollout that ended truncated (its
 * verifier gave no reward, the sandbox was lost…) carries reward 0 that is no score: it is
 * left out of the mean (the update still learns from the 0, as before: only the report changes).
 */
export function rolloutOutcome(rollouts: readonly Rollout[]): RolloutOutcome {
  const n = Math.max(1, rollouts.length);
  const mean = meanOfScored(rollouts.map((r) => ({ reward: unscoredRollout(r) ? null : r.reward })));
  return { successRate: rollouts.filter((r) => !unscoredRollout(r) && isSolved(r.reward)).length / n, ...(mean === null ? {} : { meanReward: mean }) };
}
