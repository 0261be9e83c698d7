/**
 * The figures a train run ends with, read from its metric records. An episode that ended
 * truncated (its verifier gave no reward, the sandbox was lost…) has no score: a record whose
 * episodes were none of them scored has no mean reward, and the outcome says so (null,
 * "n/a") instead of a 0.
 */
import { describeUnscored } from '../../src/policy/index.js';
import type { MetricRecord } from '../run/run-files.js';

/** Success rates (fractions 0..1) and mean rewards of one policy on the training and held-out tasks. */
export interface Outcome {
  train: number;
  heldOut: number;
  /** Mean reward of the scored training episodes; null when none was scored. */
  trainMeanReward: number | null;
  /** Mean reward of the scored held-out episodes; null when none was scored. */
  heldOutMeanReward: number | null;
  /** Episodes played (training and held-out). */
  episodes: number;
  /** Episodes (training and held-out) that ended truncated, left out of the mean rewards. */
  notScored: number;
  /** `notScored` by reason (`reward-missing`, `sandbox-lost`…). */
  notScoredByReason: Record<string, number>;
}

/** The outcome a metric record gives (a phase the run never reached: no episodes, no mean). */
export function outcomeOf(m: MetricRecord | undefined): Outcome {
  return {
    train: m?.successRate ?? 0,
    heldOut: m?.heldOutSuccessRate ?? 0,
    trainMeanReward: m?.meanReward ?? null,
    heldOutMeanReward: m?.heldOutMeanReward ?? null,
    episodes: m?.episodes ?? 0,
    notScored: m?.notScored ?? 0,
    notScoredByReason: m?.notScoredByReason ?? {},
  };
}

/** `mean reward train 0.750, held-out 1.000 (3 scored, 1 not scored (verifier-timeout 1))`; `mean reward n/a (…)` when none was scored. */
export function describeMeanReward(outcome: Outcome): string {
  const { trainMeanReward: train, heldOutMeanReward: heldOut } = outcome;
  const figure = (x: number | null) => (x === null ? 'n/a' : x.toFixed(3));
  const means = train === null && heldOut === null ? 'mean reward n/a' : `mean reward train ${figure(train)}, held-out ${figure(heldOut)}`;
  return outcome.notScored === 0 ? means : `${means} (${outcome.episodes - outcome.notScored} scored, ${describeUnscored(outcome.notScoredByReason)})`;
}
