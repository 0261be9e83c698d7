import type { Task } from '../datasets/index.js';
import type { CommandEvent } from '../sandbox/shell/types.js';
import type { DiskEnforcement } from '../sandbox/types.js';
import type { UnscorableReason } from '../errors.js';
import type { EpisodeCheckpoint } from './checkpoint/index.js';

/** Gymnasium-style step result. `terminated`: the task ended (submit, skip). `truncated`: cut off (turn limit, lost sandbox). */
export interface StepResult {
  observation: string;
  reward: number;
  terminated: boolean;
  truncated: boolean;
  info: StepInfo;
}

export interface StepInfo {
  /** InterCode's `action_executed`: the action ran and exited with status 0. */
  actionExecuted: boolean;
  exitCode: number | null;
  durationMs: number;
  /** Timeouts, truncated output, shell restarts, OOM kills… */
  events: CommandEvent[];
  /** On submit: the reward's parts and what they were computed from. */
  score?: Score;
  /** Why the episode was truncated, when it was. */
  truncation?: { reason: 'turn-limit' | 'sandbox-lost' | 'state-unreadable' | 'protocol-violation' | 'disk-limit' | UnscorableReason; message: string; details?: Record<string, unknown> };
}

/** A reward with its named parts and whatever else explains it (InterCode's info fields). */
export interface Score {
  reward: number;
  parts: Record<string, number>;
  details: Record<string, unknown>;
}

export interface ResetOptions {
  /** Dataset index, or a task given directly. Omitted: a random task (seeded by the env's seed). */
  task?: number | Task;
}

export interface ResetResult {
  /** The task's natural-language query (empty in tool mode, where there is no dataset). */
  observation: string;
  info: {
    task: Task | null;
    /** The sandbox's disk limit and how it is held (see DiskEnforcement), when it has one. */
    disk?: { limitBytes: number; enforcement: DiskEnforcement };
  };
}

/** How one step runs. */
export interface StepOptions {
  /**
   * Aborting it stops the running action at once, as its time limit would (its processes
   * killed, its output so far observed); the episode goes on. Envs whose actions cannot be
   * stopped early ignore it.
   */
  signal?: AbortSignal;
}

/** The environment contract every env and wrapper implements. */
export interface Env {
  readonly id: string;
  reset(options?: ResetOptions): Promise<ResetResult>;
  step(action: string, options?: StepOptions): Promise<StepResult>;
  close(): Promise<void>;
}

/**
 * An env over a dataset that can also be scored without ending the episode — what the
 * CLI commands (play, run, replay, eval) drive. Every env the project ships implements it.
 */
export interface TaskEnv extends Env {
  readonly tasks: readonly Task[];
  /**
   * The reward the episode would get if submitted now; the episode goes on. `submission`
   * is what a `submit <argument>` action would carry (Python: the function's name), for
   * envs whose submit takes one.
   */
  peekScore(submission?: string): Promise<Score>;
  /**
   * How long `task`'s gold command took when the env last verified it, for envs that keep
   * that (see GoldCache); undefined when unknown. Commands that play golds schedule by it.
   */
  goldDurationMs?(task: Task): Promise<number | undefined>;
}

/** A task env whose live episode can be saved and continued elsewhere (see docs/fork.md). */
export interface CheckpointableEnv extends TaskEnv {
  checkpoint(): Promise<EpisodeCheckpoint>;
  restore(checkpoint: EpisodeCheckpoint): Promise<void>;
  releaseCheckpoint(checkpoint: EpisodeCheckpoint): void;
}

/** Whether `env` can checkpoint its episodes. */
export function isCheckpointable(env: TaskEnv): env is CheckpointableEnv {
  const candidate = env as Partial<CheckpointableEnv>;
  return typeof candidate.checkpoint === 'function' && typeof candidate.restore === 'function' && typeof candidate.releaseCheckpoint === 'function';
}

/** A task env whose live episode can continue in `n` new envs of its kind (SandboxEnv.fork); the caller closes them. */
export interface ForkableEnv extends TaskEnv {
  fork(n: number): Promise<TaskEnv[]>;
}

/** Whether `env` can fork its episodes. */
export function isForkable(env: TaskEnv): env is ForkableEnv {
  return typeof (env as Partial<ForkableEnv>).fork === 'function';
}
