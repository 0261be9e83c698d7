/**
 * REINFORCE with a learned baseline. Each state of an episode gets the episode's final
 * reward as its return (InterCode's rewards come at the submit; no discount). Loss =
 * −mean(A·log π(a|s)) + c_v·mean((V(s) − R)²) − c_e·mean(entropy), with the advantage
 * A = R − V(s) computed before the update (the baseline takes no policy gradient).
 * Episodes cut off because their sandbox was lost carry no reward signal and are skipped.
 */
import * as tf from '@tensorflow/tfjs';
import type { Rollout } from '../../src/policy/index.js';
import type { CandidateSet } from '../policy/candidates.js';
import type { PolicyState } from '../policy/features.js';
import { disposeBatch, type ScorerNetwork } from '../policy/network.js';
import { stateAfter } from '../policy/neural-policy.js';

export interface PolicyGradientOptions {
  /** Actions the policy chose per episode; a submit forced at the limit is not one of them. */
  turnLimit: number;
  valueCoef: number;
  entropyCoef: number;
}

/** @returns the update's loss, or undefined when no episode could be learned from. */
export function policyGradientStep(network: ScorerNetwork, optimizer: tf.Optimizer, rollouts: readonly Rollout[], candidates: CandidateSet, options: PolicyGradientOptions): number | undefined {
  const states: PolicyState[] = [];
  const lists: string[][] = [];
  const chosen: number[] = [];
  const returns: number[] = [];
  for (const played of rollouts) {
    if (played.turns.at(-1)?.info.truncation?.reason === 'sandbox-lost') continue;
    played.turns.slice(0, options.turnLimit).forEach((turn, t) => {
      const state = stateAfter(played.task.query, played.turns.slice(0, t));
      const list = candidates.forState(state);
      const at = list.indexOf(turn.action);
      if (at < 0) return;
      states.push(state);
      lists.push(list);
      chosen.push(at);
      returns.push(played.reward);
    });
  }
  if (states.length === 0) return undefined;
  const batch = network.encode(states, lists);
  const targets = chosen.map((at, i) => batch.columns[i]![at]!);
  try {
    const baseline = tf.tidy(() => network.forward(batch).values.dataSync());
    const advantages = returns.map((r, i) => r - baseline[i]!);
    const loss = optimizer.minimize(
      () => {
        const { logits, values } = network.forward(batch);
        const logp = tf.logSoftmax(logits);
        const picked = tf.sum(tf.mul(logp, tf.oneHot(tf.tensor1d(targets, 'int32'), batch.actions.length)), 1);
        const policyLoss = tf.neg(tf.mean(tf.mul(picked, tf.tensor1d(advantages))));
        const valueLoss = tf.mean(tf.square(tf.sub(values, tf.tensor1d(returns))));
        const probs = tf.softmax(logits);
        const entropy = tf.neg(tf.mean(tf.sum(tf.mul(probs, tf.maximum(logp, -30)), 1)));
        return tf.add(policyLoss, tf.sub(tf.mul(valueLoss, options.valueCoef), tf.mul(entropy, options.entropyCoef))) as tf.Scalar;
      },
      true,
      network.variables,
    )!;
    const value = loss.dataSync()[0]!;
    loss.dispose();
    return value;
  } finally {
    disposeBatch(batch);
  }
}
