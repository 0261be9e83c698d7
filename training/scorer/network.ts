/**
 * The candidate scorer: two small towers over hashed features. The state tower maps the
 * state's features to a hidden layer h (tanh) and an embedding; the candidate tower maps
 * each candidate action's features to an embedding; a candidate's logit is the dot product
 * of the two embeddings. A separate value tower on the state's features estimates its
 * return (the baseline of policy gradient); it shares no weights with the policy, so its
 * large early errors do not disturb what behaviour cloning taught the policy. Candidates a
 * state does not offer are masked out of its softmax.
 */
import * as tf from '@tensorflow/tfjs';
import { ConfigError } from '../../src/errors.js';
import { normal, type Random } from '../rng.js';
import { candidateFeatures, densify, stateFeatures, type PolicyState, type SparseFeatures } from './features.js';

export interface NetworkShape {
  /** Hashed feature dimensions (default 4096). */
  features: number;
  /** Hidden units per tower (default 64). */
  hidden: number;
  /** Embedding size where states meet candidates (default 32). */
  embedding: number;
}

export const DEFAULT_SHAPE: NetworkShape = { features: 4096, hidden: 64, embedding: 32 };

/** Weights as plain arrays, for checkpoints. */
export interface WeightValues {
  shape: number[];
  data: Float32Array;
}

/** A batch of states, each with its own candidate list, as tensors. */
export interface EncodedBatch {
  states: tf.Tensor2D;
  candidates: tf.Tensor2D;
  /** 0 where state i offers candidate j, a large negative number elsewhere. */
  mask: tf.Tensor2D;
  /** Candidate actions, the columns of the logits. */
  actions: string[];
  /** Column of each state's candidates in `actions`. */
  columns: number[][];
}

const MASKED = -1e9;

export class ScorerNetwork {
  readonly shape: NetworkShape;
  /** Trainable variables in a fixed order (checkpoints and optimizer state rely on it). */
  readonly variables: tf.Variable[];
  private readonly candidateCache = new Map<string, SparseFeatures>();

  /** Weights drawn from `random` (Glorot-normal, zero biases). */
  constructor(shape: NetworkShape, random: Random) {
    this.shape = shape;
    const { features: d, hidden: h, embedding: e } = shape;
    const glorot = (rows: number, cols: number) => {
      const scale = Math.sqrt(2 / (rows + cols));
      return tf.variable(tf.tensor2d(Float32Array.from({ length: rows * cols }, () => normal(random) * scale), [rows, cols]));
    };
    const zeros = (n: number) => tf.variable(tf.zeros([n]));
    this.variables = [glorot(d, h), zeros(h), glorot(h, e), glorot(d, h), zeros(h), glorot(h, e), glorot(d, h), zeros(h), glorot(h, 1), zeros(1)];
  }

  /** Dense tensors for `states`, each offering its own candidate list. */
  encode(states: readonly PolicyState[], candidateLists: readonly (readonly string[])[]): EncodedBatch {
    const d = this.shape.features;
    const actions: string[] = [];
    const column = new Map<string, number>();
    const columns = candidateLists.map((list) =>
      list.map((action) => {
        let c = column.get(action);
        if (c === undefined) {
          c = actions.length;
          column.set(action, c);
          actions.push(action);
        }
        return c;
      }),
    );
    const mask = new Float32Array(states.length * actions.length).fill(MASKED);
    columns.forEach((cols, i) => cols.forEach((c) => (mask[i * actions.length + c] = 0)));
    return {
      states: tf.tensor2d(densify(states.map((s) => stateFeatures(s, d)), d), [states.length, d]),
      candidates: tf.tensor2d(densify(actions.map((a) => this.cachedCandidate(a)), d), [actions.length, d]),
      mask: tf.tensor2d(mask, [states.length, actions.length]),
      actions,
      columns,
    };
  }

  private cachedCandidate(action: string): SparseFeatures {
    let features = this.candidateCache.get(action);
    if (!features) {
      features = candidateFeatures(action, this.shape.features);
      if (this.candidateCache.size < 100_000) this.candidateCache.set(action, features);
    }
    return features;
  }

  /** Masked logits [states × actions] and state values [states]. */
  forward(batch: EncodedBatch): { logits: tf.Tensor2D; values: tf.Tensor1D } {
    const [sw1, sb1, sw2, cw1, cb1, cw2, vw1, vb1, vw2, vb2] = this.variables as [tf.Variable, tf.Variable, tf.Variable, tf.Variable, tf.Variable, tf.Variable, tf.Variable, tf.Variable, tf.Variable, tf.Variable];
    return tf.tidy(() => {
      const hidden = tf.tanh(tf.add(tf.matMul(batch.states, sw1), sb1));
      const stateEmbedding = tf.matMul(hidden, sw2);
      const candidateEmbedding = tf.matMul(tf.tanh(tf.add(tf.matMul(batch.candidates, cw1), cb1)), cw2);
      const logits = tf.add(tf.matMul(stateEmbedding, candidateEmbedding, false, true), batch.mask) as tf.Tensor2D;
      const valueHidden = tf.tanh(tf.add(tf.matMul(batch.states, vw1), vb1));
      const values = tf.reshape(tf.add(tf.matMul(valueHidden, vw2), vb2), [-1]) as tf.Tensor1D;
      return { logits, values };
    });
  }

  /** Copies of the weights. */
  exportWeights(): WeightValues[] {
    return this.variables.map((v) => ({ shape: v.shape.slice(), data: v.dataSync() as Float32Array }));
  }

  /** @throws ConfigError when the saved weights do not fit this network's shape. */
  importWeights(weights: readonly WeightValues[]): void {
    if (weights.length !== this.variables.length) throw new ConfigError('checkpoint', `has ${weights.length} weight tensors, the network ${this.variables.length}`);
    weights.forEach((w, i) => {
      const v = this.variables[i]!;
      if (w.shape.join('x') !== v.shape.join('x')) throw new ConfigError('checkpoint', `weight ${i} has shape ${w.shape.join('x')}, the network ${v.shape.join('x')}`);
      tf.tidy(() => v.assign(tf.tensor(w.data, w.shape)));
    });
  }

  dispose(): void {
    for (const v of this.variables) v.dispose();
  }
}

/** Disposes the tensors of an encoded batch. */
export function disposeBatch(batch: EncodedBatch): void {
  batch.states.dispose();
  batch.candidates.dispose();
  batch.mask.dispose();
}
