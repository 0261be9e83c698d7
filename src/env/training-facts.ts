/**
 * What an env tells a trainer about itself, as plain data (EnvPlugin.training): here, below both the envs and training/, so that an env states
 * them without knowing the trainer, and the trainer reads them without knowing the env.
 */

/** An env's exploratory actions: fixed ones, and ones read off the last observation. */
export interface Exploration {
  fixed: readonly string[];
  fromObservation: (observation: string) => string[];
}

/** Which corpus a run learns from: the shipped NL2Bash corpus, or none. */
export type CorpusName = 'nl2bash' | 'none';

/** An env's facts for the in-process trainer. */
export interface EnvTrainingFacts {
  /** Exploratory actions the trained policy may take besides the demonstrated ones. */
  readonly exploration: Exploration;
  /** The corpus `train` imitates and retrieves candidates from by default, and how many per state; absent: none. */
  readonly corpus?: { readonly name: CorpusName; readonly retrievedPerState: number };
}
