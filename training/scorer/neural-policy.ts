import * as tf from '@tensorflow/tfjs';
import type { Agent, EpisodeContext, Policy } from '../../src/policy/index.js';
import type { Random } from '../rng.js';
import type { CandidateSet } from './candidates.js';
import type { PolicyState } from './features.js';
import { disposeBatch, type ScorerNetwork } from './network.js';

/** The state after `history` in an episode of `query`. */
export function stateAfter(query: string, history: readonly { action: string; observation: string }[]): PolicyState {
  const last = history.at(-1);
  return { query, observation: last?.observation ?? query, previousAction: last?.action ?? '', step: history.length };
}

/** How a {@link NeuralPolicy} picks among scored candidates: the best, or a draw from the softmax. */
export type Choice = { kind: 'greedy' } | { kind: 'sample'; random: Random };

/** Index drawn from the softmax of `logits`. */
export function sampleSoftmax(logits: ArrayLike<number>, random: Random): number {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) max = Math.max(max, logits[i]!);
  const weights = Array.from(logits, (l) => Math.exp(l - max));
  let mass = random() * weights.reduce((a, b) => a + b, 0);
  for (let i = 0; i < weights.length; i++) {
    mass -= weights[i]!;
    if (mass < 0) return i;
  }
  return weights.length - 1;
}

function argmax(values: readonly number[]): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i]! > values[best]!) best = i;
  return best;
}

/**
 * A trained candidate scorer as a {@link Policy}: in each state it scores the candidate
 * actions and takes the best (greedy) or samples one.
 */
export class NeuralPolicy implements Policy {
  readonly name: string;
  constructor(
    private readonly network: ScorerNetwork,
    private readonly candidates: CandidateSet,
    private readonly choice: Choice,
    name = `neural-${choice.kind}`,
  ) {
    this.name = name;
  }

  begin(context: EpisodeContext): Agent {
    return {
      act: async (history) => {
        const state = stateAfter(context.task.query, history);
        const offered = this.candidates.forState(state);
        const batch = this.network.encode([state], [offered]);
        try {
          const logits = tf.tidy(() => this.network.forward(batch).logits.dataSync());
          const scores = batch.columns[0]!.map((c) => logits[c]!);
          const pick = this.choice.kind === 'greedy' ? argmax(scores) : sampleSoftmax(scores, this.choice.random);
          return offered[pick]!;
        } finally {
          disposeBatch(batch);
        }
      },
    };
  }
}

/**
 * Retrieval without learning: the first retrieved command (the nearest description's,
 * adapted to the query), then submit; submit at once when nothing is retrieved.
 */
export class RetrievalPolicy implements Policy {
  readonly name = 'retrieval';
  constructor(private readonly candidates: CandidateSet) {}

  begin(context: EpisodeContext): Agent {
    return {
      act: async (history) => (history.length === 0 ? (this.candidates.retrieved(stateAfter(context.task.query, history))[0] ?? 'submit') : 'submit'),
    };
  }
}

/** Uniformly random among the candidates: the baseline a learned policy must beat. */
export class RandomPolicy implements Policy {
  readonly name = 'random';
  constructor(private readonly candidates: CandidateSet, private readonly random: Random) {}

  begin(context: EpisodeContext): Agent {
    return {
      act: async (history) => {
        const state = stateAfter(context.task.query, history);
        const offered = this.candidates.forState(state);
        return offered[Math.floor(this.random() * offered.length)]!;
      },
    };
  }
}
