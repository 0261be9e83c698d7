import type { Task } from '../datasets/index.js';
import type { TaskEnv } from '../env/types.js';
import type { RecordedEpisode } from '../trajectory/index.js';
import { pairEpisodesWithTasks, type QueryMismatch, type QueryMismatchPolicy } from './task-match.js';

/** Two rewards agree when they differ by at most this (InterCode's rewards are sums of rounded parts). */
export const REWARD_TOLERANCE = 0.01;

export interface ReplayedStep {
  taskIndex: number;
  step: number;
  action: string;
  recordedReward: number;
  reward: number;
  parts: Record<string, number>;
  recordedObservation: string | undefined;
  observation: string;
}

export interface ReplayReport {
  episodes: number;
  steps: number;
  agreeingSteps: number;
  /** agreeingSteps / steps. */
  agreement: number;
  /** Share of episodes whose best recomputed reward is 1. */
  successRate: number;
  /** Share of episodes whose recorded max_reward is 1. */
  recordedSuccessRate: number;
  /** Steps whose observation equals the recorded one exactly. */
  sameObservationSteps: number;
  disagreements: ReplayedStep[];
  /**
   * Recorded turns not replayed, because InterCode's script never executed them: replies
   * without code (`noCode`, recorded reward 0) and replies the model's API refused
   * (`blocked`, PaLM's logs). They are counted as the recording counted them (turns with
   * reward 0) and left out of `steps`.
   */
  notExecuted: { noCode: number; blocked: number };
  /** Recorded episodes whose query is not the data file's at their index, and what was done with each. */
  queryMismatches: QueryMismatch[];
}

/**
 * How a recorded file was made. `every-step` (Try Again, Plan & Solve): after every action
 * the episode was scored as if submitted then. `on-submit` (ReAct): actions were written
 * `execute[<command>]`, and only `submit` carried a reward; other steps recorded 0.
 * `on-flag` (CTF): nothing was scored after an action; only `submit <flag>` actions
 * carried a reward, and after a wrong flag the episode went on (the env must answer a
 * wrong flag and continue, as the CTF env does by default). Actions written `cmd <command>`
 * run `<command>`, and a wrong flag compares as -1 in files that scored it so (see
 * {@link wrongFlagRewardOf}), as InterCode's first CTF env did.
 * `def-submit` (Python): an action starting with `def` was run and immediately followed
 * by `submit <that function's name>`, whose reward was recorded; any other action recorded 0.
 */
export type RecordingProtocol = 'every-step' | 'on-submit' | 'on-flag' | 'def-submit';

/** The function a `def-submit` action defines, found as InterCode's script found it. */
const DEFINED_FUNCTION = /^def (\w+)\(/;

const REACT_ACTION = /^execute\[([\s\S]*)\]$/;
const FLAG_SUBMISSION = /^\s*submit\s+\S/;

/**
 * ReAct files wrap commands as `execute[…]`: any such action marks the file as `on-submit`;
 * CTF files submit flags (`submit <flag>`): any such action marks it as `on-flag`.
 */
export function detectProtocol(episodes: readonly RecordedEpisode[]): RecordingProtocol {
  const environment = (episodes[0]?.raw as { environment?: unknown } | undefined)?.environment;
  if (environment === 'ic_python') return 'def-submit';
  const any = (test: RegExp) => episodes.some((e) => e.actions.some((a) => test.test(a.trim())));
  if (any(REACT_ACTION)) return 'on-submit';
  return any(FLAG_SUBMISSION) ? 'on-flag' : 'every-step';
}

export interface ReplayOptions {
  protocol: RecordingProtocol;
  /** One env per episode in flight; each is reset per episode. */
  envs: readonly TaskEnv[];
  tasks: readonly Task[];
  episodes: readonly RecordedEpisode[];
  /** What to do with an episode whose recorded query is not the data file's (default `fail`; see {@link QueryMismatchPolicy}). */
  onQueryMismatch?: QueryMismatchPolicy;
  /** The recording's path, for messages (default `<recording>`). */
  file?: string;
  onEpisode?: (done: number, total: number) => void;
  /**
   * `on-submit` files: how the env's evaluation script turned a recorded action into the
   * command it ran (e.g. InterCode's SQL parser cut at the first ";"). Default: the text
   * inside a whole-action `execute[…]`.
   */
  reactCommand?: (action: string) => string;
}

const solved = (reward: number) => Math.abs(reward - 1) < 1e-9;

/**
 * Re-executes recorded trajectories the way InterCode's evaluation scripts made them (see
 * {@link RecordingProtocol}); nothing is reset between the actions of an episode, and a
 * recorded `submit` runs nothing and is scored in place. Turns InterCode's script never
 * executed (no code in the reply, a refused reply) are not executed either (see
 * {@link ReplayReport.notExecuted}).
 * @throws QueryMismatchError (a TrajectoryError) under `onQueryMismatch: 'fail'` when a
 *   recorded query differs from the data file's at its index or the index has no task,
 *   before any episode runs.
 */
export async function replayTrajectories(options: ReplayOptions): Promise<ReplayReport> {
  const { paired, mismatches } = pairEpisodesWithTasks(options.episodes, options.tasks, options.onQueryMismatch ?? 'fail', options.file ?? '<recording>');
  const wrongFlagReward = wrongFlagRewardOf(options.episodes);
  const results: { steps: ReplayedStep[]; best: number; recordedBest: number }[] = [];
  let next = 0;
  let done = 0;
  async function worker(env: TaskEnv): Promise<void> {
    for (let i = next++; i < paired.length; i = next++) {
      const { episode, task } = paired[i]!;
      results[i] = await replayEpisode(env, episode, task, options.protocol, options.reactCommand ?? defaultReactCommand, wrongFlagReward);
      options.onEpisode?.(++done, paired.length);
    }
  }
  await Promise.all(options.envs.map(worker));

  const steps = results.flatMap((r) => r.steps);
  const agreeing = steps.filter((s) => Math.abs(s.reward - s.recordedReward) <= REWARD_TOLERANCE + 1e-9);
  const agreeingSet = new Set(agreeing);
  return {
    episodes: results.length,
    steps: steps.length,
    agreeingSteps: agreeing.length,
    agreement: steps.length ? agreeing.length / steps.length : 1,
    successRate: results.length ? results.filter((r) => solved(r.best)).length / results.length : 0,
    recordedSuccessRate: results.length ? results.filter((r) => solved(r.recordedBest)).length / results.length : 0,
    sameObservationSteps: steps.filter((s) => s.observation === s.recordedObservation).length,
    disagreements: steps.filter((s) => !agreeingSet.has(s)),
    notExecuted: {
      noCode: paired.reduce((n, p) => n + p.episode.noCode.filter(Boolean).length, 0),
      blocked: paired.reduce((n, p) => n + p.episode.blockedTurns, 0),
    },
    queryMismatches: mismatches,
  };
}

const defaultReactCommand = (action: string) => REACT_ACTION.exec(action.trim())?.[1] ?? action;

/**
 * `on-flag` files: InterCode's first CTF env (`intercode/envs/game/ctf_env.py`, behind the
 * GPT-4 25-turn log) took actions as `cmd <command>` and ran the command (its `clean_cmd`
 * dropped the first four characters); later logs hold plain commands.
 */
const ctfCommand = (action: string) => (/^cmd\s/.test(action) ? action.slice(4).trim() : action);

/**
 * How a recording scored a wrong flag: that first CTF env gave -1 (and counted submissions
 * as rewards of 1 or -1), later ones 0. Read from the file: any recorded -1 means -1.
 */
export function wrongFlagRewardOf(episodes: readonly RecordedEpisode[]): 0 | -1 {
  return episodes.some((e) => e.rewards.some((r) => r === -1)) ? -1 : 0;
}

async function replayEpisode(env: TaskEnv, episode: RecordedEpisode, task: Task, protocol: RecordingProtocol, reactCommand: (action: string) => string, wrongFlagReward: 0 | -1) {
  await env.reset({ task });
  const steps: ReplayedStep[] = [];
  let observation = task.query;
  for (const [k, action] of episode.actions.entries()) {
    // InterCode's scripts answered a reply without code with the retry message: nothing ran, nothing was scored.
    if (episode.noCode[k]) continue;
    if (protocol === 'on-flag') {
      const result = await env.step(ctfCommand(action));
      if (result.truncated) break;
      const wrongFlag = FLAG_SUBMISSION.test(action.trim()) && result.reward === 0;
      steps.push({
        taskIndex: episode.taskIndex,
        step: k,
        action,
        recordedReward: episode.rewards[k] ?? 0,
        reward: wrongFlag ? wrongFlagReward : result.reward,
        parts: result.info.score?.parts ?? {},
        recordedObservation: episode.observations[k],
        observation: result.observation,
      });
      if (result.terminated) break;
      continue;
    }
    const isSubmit = action.trim() === 'submit';
    if (!isSubmit) {
      const command = protocol === 'on-submit' ? reactCommand(action) : action;
      const result = await env.step(command);
      observation = result.observation;
      if (result.truncated) break;
    }
    const defined = protocol === 'def-submit' ? DEFINED_FUNCTION.exec(action)?.[1] : undefined;
    const score =
      protocol === 'def-submit'
        ? defined !== undefined ? await env.peekScore(defined) : { reward: 0, parts: {} }
        : isSubmit || protocol === 'every-step' ? await env.peekScore() : { reward: 0, parts: {} };
    steps.push({
      taskIndex: episode.taskIndex,
      step: k,
      action,
      recordedReward: episode.rewards[k] ?? 0,
      reward: score.reward,
      parts: score.parts,
      recordedObservation: episode.observations[k],
      observation,
    });
  }
  return {
    steps,
    best: Math.max(0, ...steps.map((s) => s.reward)),
    recordedBest: episode.maxReward,
  };
}
