/**
 * `intercode-ts/eval`: evaluating a strategy over a task file, as `intercode eval` does:
 * one episode, or a whole run with its summary.
 */
export { playEpisode, type EpisodeSettings } from '../eval/episode.js';
export { runEval, type EvalOptions, type EvalResult } from '../eval/runner.js';
export type { EvalSummary } from '../eval/summary.js';
