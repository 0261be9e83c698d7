/**
 * Behaviour cloning: maximise the log-probability of the demonstrated action among the
 * candidates of its state (env demonstrations: the candidate set's; corpus pairs: the
 * pair's own command among its neighbours' adapted commands). One epoch draws ⌈transitions / batch⌉ minibatches (or as many as asked) from the
 * replay buffer, uniformly or by priority (priority = the example's last loss, with
 * importance-sampling weights).
 */
import * as tf from '@tensorflow/tfjs';
import type { ReplayBuffer } from '../buffer/replay-buffer.js';
import type { Transition } from '../buffer/types.js';
import type { Random } from '../rng.js';
import { disposeBatch, type ScorerNetwork } from '../scorer/network.js';

/** The candidates offered in a transition's state; the demonstrated action must be among them. */
export type CandidatesOf = (transition: Transition) => string[];

export interface BcEpochOptions {
  batchSize: number;
  /** Minibatches in the epoch (default: enough to draw the buffer's size). */
  batches?: number;
  sampling: 'uniform' | 'prioritized';
  random: Random;
}

export interface BcEpochResult {
  loss: number;
  accuracy: number;
}

export function behaviourCloningEpoch(network: ScorerNetwork, optimizer: tf.Optimizer, buffer: ReplayBuffer, candidatesOf: CandidatesOf, options: BcEpochOptions): BcEpochResult {
  const batches = options.batches ?? Math.ceil(buffer.size / options.batchSize);
  let lossSum = 0;
  let correct = 0;
  let seen = 0;
  for (let b = 0; b < batches; b++) {
    const drawn = options.sampling === 'prioritized' ? buffer.samplePrioritized(options.batchSize, options.random) : { slots: [], transitions: buffer.sample(options.batchSize, options.random), weights: undefined };
    const result = cloneStep(network, optimizer, drawn.transitions, candidatesOf, drawn.weights);
    if (options.sampling === 'prioritized') buffer.updatePriorities(drawn.slots, result.perExample);
    lossSum += result.loss;
    correct += result.correct;
    seen += drawn.transitions.length;
  }
  return { loss: lossSum / batches, accuracy: correct / seen };
}

function cloneStep(network: ScorerNetwork, optimizer: tf.Optimizer, transitions: readonly Transition[], candidatesOf: CandidatesOf, weights: number[] | undefined): { loss: number; perExample: number[]; correct: number } {
  const lists = transitions.map(candidatesOf);
  const batch = network.encode(
    transitions.map((t) => ({ query: t.query, observation: t.observation, previousAction: t.previousAction, step: t.step })),
    lists,
  );
  const targets = transitions.map((t, i) => {
    const at = lists[i]!.indexOf(t.action);
    if (at < 0) throw new Error(`demonstrated action "${t.action}" is not among the candidates`);
    return batch.columns[i]![at]!;
  });
  try {
    let perExample: tf.Tensor1D | undefined;
    let predicted: tf.Tensor1D | undefined;
    const loss = optimizer.minimize(
      () => {
        const { logits } = network.forward(batch);
        const picked = tf.sum(tf.mul(tf.logSoftmax(logits), tf.oneHot(tf.tensor1d(targets, 'int32'), batch.actions.length)), 1);
        const losses = tf.neg(picked) as tf.Tensor1D;
        perExample = tf.keep(losses.clone());
        predicted = tf.keep(tf.argMax(logits, 1) as tf.Tensor1D);
        return weights ? tf.mean(tf.mul(losses, tf.tensor1d(weights))) : tf.mean(losses);
      },
      true,
      network.variables,
    )!;
    const value = loss.dataSync()[0]!;
    const picks = predicted!.dataSync();
    const result = { loss: value, perExample: Array.from(perExample!.dataSync()), correct: targets.filter((t, i) => picks[i] === t).length };
    loss.dispose();
    perExample!.dispose();
    predicted!.dispose();
    return result;
  } finally {
    disposeBatch(batch);
  }
}
