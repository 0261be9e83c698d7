/**
 * The actions a candidate-scoring policy chooses among: every distinct action seen in the
 * demonstrations it was built from, `submit`, and exploratory actions of the env — fixed
 * ones (ls, SHOW TABLES, dir()) and ones read off the last observation (cat a file it
 * listed, DESCRIBE a table it showed).
 */

/** An env's exploratory actions: fixed ones, and ones read off the last observation (see EnvPlugin.exploration). */
export interface Exploration {
  fixed: readonly string[];
  fromObservation: (observation: string) => string[];
}

export class CandidateSet {
  /** The actions offered in every state, in a stable order. */
  readonly fixed: readonly string[];

  /** @param harvested actions from demonstrations, in first-seen order; @param exploration the env's exploratory actions. */
  constructor(readonly harvested: readonly string[], private readonly exploration: Exploration) {
    this.fixed = [...new Set([...harvested, 'submit', ...exploration.fixed])];
  }

  /** The candidates in a state whose last observation is `observation` (the query before any action). */
  forState(observation: string, step: number): string[] {
    if (step === 0) return this.fixed.slice();
    const derived = this.exploration.fromObservation(observation);
    return [...new Set([...this.fixed, ...derived])];
  }
}

/** Distinct actions of the given episodes, in first-seen order. */
export function harvestActions(episodes: readonly { actions: readonly string[] }[]): string[] {
  return [...new Set(episodes.flatMap((e) => e.actions))];
}
