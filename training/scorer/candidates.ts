/**
 * The actions a candidate-scoring policy chooses among: every distinct action seen in the
 * demonstrations it was built from (without retrieval), `submit`, exploratory actions of the env — fixed
 * ones (ls, SHOW TABLES, dir()) and ones read off the last observation (cat a file it
 * listed, DESCRIBE a table it showed) — and, with a retriever, the commands of the
 * descriptions most like the query, adapted to it (commands no demonstration showed).
 */
import type { CommandRetriever } from '../corpus/command-retriever.js';
import type { PolicyState } from './features.js';
import type { Exploration } from '../../src/env/training-facts.js';


/** Retrieved candidates: the adapted commands of the `perState` nearest descriptions. */
export interface Retrieval {
  retriever: CommandRetriever;
  perState: number;
}

export class CandidateSet {
  /** The actions offered in every state, in a stable order. */
  readonly fixed: readonly string[];

  /**
   * @param exploration the env's exploratory actions (EnvPlugin.training).
   * @param harvested actions from demonstrations, in first-seen order: offered in every state
   * when there is no retrieval; with one, a demonstration's command reaches the states of
   * queries like its own through the retriever instead, so a held-out query is not offered
   * the training tasks' golds wholesale (the policy would learn to memorise them).
   */
  constructor(
    readonly harvested: readonly string[],
    private readonly exploration: Exploration,
    readonly retrieval?: Retrieval,
  ) {
    this.fixed = [...new Set([...(retrieval ? [] : harvested), 'submit', ...exploration.fixed])];
  }

  /** The adapted commands retrieved for the state's query (and, after the first action, its last output), best first. */
  retrieved(state: PolicyState): string[] {
    if (!this.retrieval) return [];
    return this.retrieval.retriever.commandsFor(state.query, this.retrieval.perState, state.step > 0 ? { observation: state.observation } : {});
  }

  /** The candidates in `state`: the fixed ones, actions read off its last output, the retrieved ones. */
  forState(state: PolicyState): string[] {
    const derived = state.step === 0 ? [] : this.exploration.fromObservation(state.observation);
    return [...new Set([...this.fixed, ...derived, ...this.retrieved(state)])];
  }
}

/** Distinct actions of the given episodes, in first-seen order. */
export function harvestActions(episodes: readonly { actions: readonly string[] }[]): string[] {
  return [...new Set(episodes.flatMap((e) => e.actions))];
}
