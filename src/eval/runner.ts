import type { Strategy } from '../agents/index.js';
import type { Task } from '../datasets/index.js';
import type { EpisodeExecutor } from './executor.js';
import { playEpisode, type EpisodeSettings } from './episode.js';
import { RunJournal, type RunSettings } from './journal.js';
import { resultLogName, writeResultLog } from './result-log.js';
import { isSolved } from '../scoring/solved.js';
import { summarize, type EvalSummary } from './summary.js';

export interface EvalOptions extends EpisodeSettings {
  strategy: Strategy;
  model: string;
  tasks: readonly Task[];
  executor: EpisodeExecutor;
  /** The run directory (journal, settings, InterCode result log). */
  out: string;
  /** What makes this run an experiment of its own; a resumed run must have the same. */
  settings: RunSettings;
  /** Called after each finished episode (and once at the start with the resumed ones). */
  onProgress?: (progress: { done: number; total: number; solved: number }) => void;
  /** Aborting stops starting episodes; those in flight finish. */
  signal?: AbortSignal;
}

export interface EvalResult {
  summary: EvalSummary;
  /** The InterCode result log written at the end. */
  logPath: string;
  /** Episodes finished by an earlier, interrupted run and not played again. */
  resumed: number;
  /** Episodes played by this run. */
  played: number;
  /** Tasks left unplayed because the run was stopped. */
  remaining: number;
}

/**
 * Evaluates `strategy` on every task: resumes from `out` (finished tasks are not played
 * again), plays the rest on the executor's envs, journals each episode as it finishes, and
 * writes the InterCode result log and the summary — also when stopped or failing half-way
 * (the log then holds the finished episodes; running again resumes).
 * @throws the first error an episode threw (ModelError, SandboxError…), after writing the log.
 */
export async function runEval(options: EvalOptions): Promise<EvalResult> {
  const journal = await RunJournal.open(options.out, options.settings);
  const taskIndices = new Set(options.tasks.map((t) => t.index));
  // In task order, so the summary's sums do not depend on the order episodes finished in.
  const finished = () => [...journal.finished.values()].filter((e) => taskIndices.has(e.task_id)).sort((a, b) => a.task_id - b.task_id);
  const resumed = finished().length;
  const todo = options.tasks.filter((t) => !journal.finished.has(t.index));
  let solved = finished().filter((e) => isSolved(e.summary.max_reward)).length;
  let done = resumed;
  options.onProgress?.({ done, total: options.tasks.length, solved });
  const writeLog = () => writeResultLog(options.out, resultLogName(options.envName, options.strategy.name, options.model, options.turns), finished());
  let logPath = '';
  try {
    await options.executor.forEach(
      todo,
      async (env, task) => {
        const episode = await playEpisode(env, options.strategy, task, options);
        await journal.add(episode);
        if (isSolved(episode.summary.max_reward)) solved += 1;
        options.onProgress?.({ done: ++done, total: options.tasks.length, solved });
      },
      options.signal,
    );
  } finally {
    await journal.flush();
    logPath = await writeLog();
  }
  const episodes = finished();
  return {
    summary: summarize(episodes),
    logPath,
    resumed,
    played: episodes.length - resumed,
    remaining: options.tasks.length - episodes.length,
  };
}
