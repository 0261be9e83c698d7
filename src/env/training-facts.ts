/**
 * What an env tells a trainer about itself, as plain data (see EnvPlugin.exploration and
 * EnvPlugin.trainingCorpus): here, below both the envs and training/, so that an env states
 * them without knowing the trainer, and the trainer reads them without knowing the env.
 */

/** An env's exploratory actions: fixed ones, and ones read off the last observation. */
export interface Exploration {
  fixed: readonly string[];
  fromObservation: (observation: string) => string[];
}

/** Which corpus a run learns from: the shipped NL2Bash corpus, or none. */
export type CorpusName = 'nl2bash' | 'none';
