/**
 * REINFORCE with a learned baseline. Each state of an episode gets the episode's final
 * reward as its return (InterCode's rewards come at the submit; no discount). Loss =
 * −mean(A·log π(a|s)) + c_v·mean((V(s) − R)²) − c_e·mean(entropy), with the advantage
 * A = R − V(s) computed before the update (the baseline takes no policy gradient).
 * The update reads the round's episodes from an on-policy replay buffer ({@link onPolicyBuffer}),
 * the one the design card draws between the vectorized envs and the loops; episodes cut off
 * because their sandbox was lost carry no reward signal and are never put in it.
 */
import * as tf from '@tensorflow/tfjs';
import type { Rollout } from '../../src/policy/index.js';
import { ReplayBuffer } from '../buffer/replay-buffer.js';
import type { Episode } from '../buffer/types.js';
import { demoFromRollout, demoTransitions } from '../demos/demo-episode.js';
import type { CandidateSet } from '../scorer/candidates.js';
import type { PolicyState } from '../scorer/features.js';
import { disposeBatch, type ScorerNetwork } from '../scorer/network.js';

export interface PolicyGradientOptions {
  /** Actions the policy chose per episode; a submit forced at the limit is not one of them. */
  turnLimit: number;
  valueCoef: number;
  entropyCoef: number;
}

/**
 * A replay buffer holding one policy-gradient round's episodes, in the order they were played
 * (each under the id `<round>-<i>`), but those whose sandbox was lost. REINFORCE is
 * on-policy: each round learns from its own buffer only.
 */
export function onPolicyBuffer(env: string, rollouts: readonly Rollout[], round: string): ReplayBuffer {
  const learnable = rollouts.filter((played) => played.turns.length > 0 && played.turns.at(-1)?.info.truncation?.reason !== 'sandbox-lost');
  const transitions = learnable.flatMap((played, i) => demoTransitions(demoFromRollout(env, played, 'policy-gradient'), `${round}-${i}`));
  const buffer = new ReplayBuffer({ capacity: Math.max(1, transitions.length) });
  buffer.addMany(transitions);
  return buffer;
}

/**
 * One REINFORCE update from `episodes` (an {@link onPolicyBuffer}'s): every transition within
 * the turn limit whose action is among its state's candidates, with its episode's reward as
 * the return.
 * @returns the update's loss, or undefined when no episode could be learned from.
 */
export function policyGradientStep(network: ScorerNetwork, optimizer: tf.Optimizer, episodes: readonly Episode[], candidates: CandidateSet, options: PolicyGradientOptions): number | undefined {
  const states: PolicyState[] = [];
  const lists: string[][] = [];
  const chosen: number[] = [];
  const returns: number[] = [];
  for (const episode of episodes) {
    for (const transition of episode.transitions.slice(0, options.turnLimit)) {
      const state: PolicyState = { query: transition.query, observation: transition.observation, previousAction: transition.previousAction, step: transition.step };
      const list = candidates.forState(state);
      const at = list.indexOf(transition.action);
      if (at < 0) continue;
      states.push(state);
      lists.push(list);
      chosen.push(at);
      returns.push(episode.reward);
    }
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
