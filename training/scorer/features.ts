/**
 * Hashed n-gram features (the "hashing trick"): text becomes a sparse vector of `dims`
 * dimensions, each token unigram and bigram adding to the slot its namespaced hash picks.
 * A state is featurised from the task's query, the last observation and the previous
 * action; a candidate action from its own text. No vocabulary is kept, so unseen words
 * cost nothing and a checkpoint needs no word list.
 */
import { hash32 } from '../rng.js';

/** What the policy sees when it chooses an action. */
export interface PolicyState {
  query: string;
  /** The previous action's output (the query itself before the first action). */
  observation: string;
  /** '' before the first action. */
  previousAction: string;
  /** Actions already taken this episode. */
  step: number;
}

/** A sparse feature vector: parallel lists of slots and values. */
export interface SparseFeatures {
  indices: number[];
  values: number[];
}

/** Observations are long; their head says most (file lists, counts, errors). */
const OBSERVATION_CHARS = 1_500;
const TOKEN = /[a-z0-9_]+|[^\sa-z0-9_]/g;

export function tokenize(text: string): string[] {
  return text.toLowerCase().match(TOKEN) ?? [];
}

/** Unigrams and bigrams of `text`, hashed under `namespace`, L2-normalised, scaled by `weight`. */
function addNgrams(into: Map<number, number>, namespace: string, text: string, dims: number, weight: number): void {
  const tokens = tokenize(text);
  const counts = new Map<number, number>();
  const bump = (gram: string) => {
    const slot = hash32(`${namespace}\u0000${gram}`) % dims;
    counts.set(slot, (counts.get(slot) ?? 0) + 1);
  };
  tokens.forEach((token, i) => {
    bump(token);
    if (i > 0) bump(`${tokens[i - 1]} ${token}`);
  });
  let norm = 0;
  for (const [slot, count] of counts) {
    const value = Math.log1p(count);
    counts.set(slot, value);
    norm += value * value;
  }
  norm = Math.sqrt(norm) || 1;
  for (const [slot, value] of counts) into.set(slot, (into.get(slot) ?? 0) + (weight * value) / norm);
}

function toSparse(features: Map<number, number>): SparseFeatures {
  const indices = [...features.keys()].sort((a, b) => a - b);
  return { indices, values: indices.map((i) => features.get(i)!) };
}

export function stateFeatures(state: PolicyState, dims: number): SparseFeatures {
  const features = new Map<number, number>();
  addNgrams(features, 'query', state.query, dims, 1);
  if (state.step > 0) addNgrams(features, 'observation', state.observation.slice(0, OBSERVATION_CHARS), dims, 1);
  addNgrams(features, 'previous', state.previousAction, dims, 1);
  const turn = hash32(`turn\u0000${Math.min(state.step, 3)}`) % dims;
  features.set(turn, (features.get(turn) ?? 0) + 1);
  return toSparse(features);
}

export function candidateFeatures(action: string, dims: number): SparseFeatures {
  const features = new Map<number, number>();
  addNgrams(features, 'action', action, dims, 1);
  const whole = hash32(`whole\u0000${action}`) % dims;
  features.set(whole, (features.get(whole) ?? 0) + 1);
  return toSparse(features);
}

/** Rows of sparse features as one dense row-major matrix. */
export function densify(rows: readonly SparseFeatures[], dims: number): Float32Array {
  const out = new Float32Array(rows.length * dims);
  rows.forEach((row, r) => row.indices.forEach((slot, i) => (out[r * dims + slot] += row.values[i]!)));
  return out;
}
