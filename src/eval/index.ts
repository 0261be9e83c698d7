/** Evaluating prompting strategies: InterCode's episode protocol, resumable runs, result logs and the paper's summary. */
export { playEpisode, stepScore, type EpisodeSettings } from './episode.js';
export type { EpisodeExecutor } from './executor.js';
export { changedSettings, parseRunSettings, RunJournal, type RunSettings } from './journal.js';
export { resultLogName, writeResultLog, type EvalEpisodeLog, type TurnHistory } from './result-log.js';
export { runEval, type EvalOptions, type EvalResult } from './runner.js';
export { summarize, type EvalSummary, type GroupSummary } from './summary.js';
