import { randomUUID } from 'node:crypto';
import { seededRandom } from '../env/episode.js';
import type { EpisodeCheckpoint } from '../env/checkpoint/index.js';
import { isCheckpointable, type CheckpointableEnv, type StepResult, type TaskEnv } from '../env/types.js';
import { CheckpointError, EnvStateError, IntercodeError } from '../errors.js';
import { capReply, WireError, type ActionData, type CheckpointRef, type CheckpointReply, type ObservationReply, type ResetData, type StateReply, type WireTask } from './protocol.js';
import { isSolved } from '../scoring/solved.js';

/** How an episode ended: scored (`solved` at reward 1, else `unsolved`), cut off, or left unfinished (a new reset, the session's end). */
export type EpisodeOutcome = 'solved' | 'unsolved' | 'truncated' | 'abandoned';

/** What a session reports as its episodes go (the server's metrics listen); it never changes what the session does. */
export interface EpisodeObserver {
  /** A reset answered after `seconds` (failed: it threw). */
  reset(seconds: number, failed: boolean): void;
  /** A step answered after `seconds` (failed: it threw). */
  step(seconds: number, failed: boolean): void;
  started(): void;
  /** `truncation`: the reason when cut off (`sandbox-lost`…). */
  finished(outcome: EpisodeOutcome, truncation?: string): void;
}

/** The most checkpoints one session holds at once (each is an archive on the server's disk): beyond, CHECKPOINT_REFUSED. */
export const MAX_SESSION_CHECKPOINTS = 8;

/** A checkpoint with the session's bookkeeping at that step (what a restore gives back). */
interface SavedEpisode {
  readonly checkpoint: EpisodeCheckpoint;
  readonly env: CheckpointableEnv;
  readonly taskId: number | null;
  readonly task: WireTask | null;
  readonly stepCount: number;
}

/**
 * One session's episodes on one env, in the protocol's terms: `reset` picks the task
 * (`task_id`, else one drawn from `seed`, else the env's own seeded choice), `step` runs an
 * action and puts `reward` and `done` beside the observation. It knows nothing of sockets
 * (every transport drives it) nor of the env's kind (it drives the {@link TaskEnv} API).
 *
 * Errors: a bad request is a {@link WireError} (VALIDATION_ERROR, SESSION_ERROR) and leaves
 * the session as it was; a reset that gets no sandbox is FACTORY_ERROR (retryable); a step
 * whose sandbox dies is no error at all but a `done` observation whose `info.truncation`
 * says why (the env reports it so).
 */
export class EpisodeSession {
  private episodeId: string | null = null;
  private taskId: number | null = null;
  private task: WireTask | null = null;
  private stepCount = 0;
  private live = false;
  /** This session's checkpoints by id: released by `release`, or all when the session ends. */
  private readonly saved = new Map<string, SavedEpisode>();

  constructor(
    private readonly env: TaskEnv,
    private readonly envName: string,
    /** The most bytes of JSON a reply may take ({@link capReply}). */
    private readonly maxReplyBytes: number,
    private readonly observer?: EpisodeObserver,
  ) {}

  /** The session is over: an episode still under way counts as abandoned, and the session's checkpoints are released. */
  end(): void {
    this.abandon();
    for (const { env, checkpoint } of this.saved.values()) env.releaseCheckpoint(checkpoint);
    this.saved.clear();
  }

  /** An episode still under way counts as abandoned (a new one starts here). */
  private abandon(): void {
    if (this.live) this.observer?.finished('abandoned');
    this.live = false;
  }

  /**
   * Saves the episode under way (it goes on unchanged); the id restores it in this session only.
   * @throws WireError SESSION_ERROR (no episode under way), CHECKPOINT_UNSUPPORTED (an env
   *   that cannot checkpoint), CHECKPOINT_REFUSED (this state cannot be carried exactly:
   *   `details.reason`; or {@link MAX_SESSION_CHECKPOINTS} held), EXECUTION_ERROR.
   */
  async checkpoint(): Promise<CheckpointReply> {
    if (this.saved.size >= MAX_SESSION_CHECKPOINTS) {
      throw new WireError('CHECKPOINT_REFUSED', `this session holds ${this.saved.size} checkpoints, the most it may; release one first`, { details: { reason: 'too-many-checkpoints', limit: MAX_SESSION_CHECKPOINTS } });
    }
    const saved = await this.save();
    this.saved.set(saved.checkpoint.id, saved);
    const { layer, dropped, durationMs, replay, database } = saved.checkpoint.info;
    return {
      checkpoint_id: saved.checkpoint.id,
      episode_id: this.episodeId,
      step_count: saved.stepCount,
      info: {
        layer: { paths: layer.paths, bytes: layer.bytes, archive_bytes: layer.archiveBytes },
        dropped: { processes: dropped.processes, shell_values: dropped.shellValues },
        duration_ms: Math.round(durationMs),
        ...(replay ? { replay } : {}),
        ...(database ? { database } : {}),
      },
    };
  }

  /**
   * Continues the episode one of this session's checkpoints saved, as a new episode (a new
   * `episode_id`); the episode under way, if any, is abandoned once the restore succeeded
   * (a failed restore leaves it as it was). The checkpoint stays, for
   * further restores.
   * @throws WireError VALIDATION_ERROR (no such checkpoint in this session), CHECKPOINT_REFUSED, EXECUTION_ERROR.
   */
  async restore(ref: CheckpointRef): Promise<StateReply> {
    await this.continueFrom(this.find(ref));
    return this.state();
  }

  /** Releases one of this session's checkpoints (its archive is removed). @throws WireError VALIDATION_ERROR (no such checkpoint). */
  release(ref: CheckpointRef): CheckpointRef {
    const saved = this.find(ref);
    saved.env.releaseCheckpoint(saved.checkpoint);
    this.saved.delete(ref.checkpoint_id);
    return ref;
  }

  /**
   * Continues the episode under way in each of `children` (sessions on other envs of the same
   * kind), each as a new episode; this one goes on unchanged. All or none: when one cannot be
   * restored the error is thrown (the caller ends the children). The checkpoint taken for it
   * is released before this returns.
   * @throws as {@link checkpoint}, and as the env's restore.
   */
  async forkInto(children: readonly EpisodeSession[]): Promise<number> {
    const saved = await this.save();
    try {
      await Promise.all(children.map((child) => child.continueFrom(saved)));
      return saved.stepCount;
    } finally {
      saved.env.releaseCheckpoint(saved.checkpoint);
    }
  }

  private find(ref: CheckpointRef): SavedEpisode {
    const saved = this.saved.get(ref.checkpoint_id);
    if (!saved) throw new WireError('VALIDATION_ERROR', `no checkpoint ${JSON.stringify(ref.checkpoint_id.slice(0, 64))} in this session (released, or another session's)`);
    return saved;
  }

  private async save(): Promise<SavedEpisode> {
    if (!this.live) throw new WireError('SESSION_ERROR', 'checkpoint and fork need an episode under way: send {"type": "reset"} first');
    const env = this.env;
    if (!isCheckpointable(env)) throw new WireError('CHECKPOINT_UNSUPPORTED', `the ${this.envName} env cannot checkpoint its episodes`);
    try {
      const checkpoint = await env.checkpoint();
      return { checkpoint, env, taskId: this.taskId, task: this.task, stepCount: this.stepCount };
    } catch (error) {
      throw checkpointFailure(error);
    }
  }

  /** This session's env continues `saved` (restored into it), as a new episode. */
  private async continueFrom(saved: SavedEpisode): Promise<void> {
    const env = this.env;
    if (!isCheckpointable(env)) throw new WireError('CHECKPOINT_UNSUPPORTED', `the ${this.envName} env cannot restore a checkpoint`);
    try {
      await env.restore(saved.checkpoint);
    } catch (error) {
      throw checkpointFailure(error);
    }
    this.abandon();
    this.observer?.started();
    this.taskId = saved.taskId;
    this.task = saved.task;
    this.stepCount = saved.stepCount;
    this.episodeId = randomUUID();
    this.live = true;
  }

  /** @throws WireError VALIDATION_ERROR (task_id out of range), FACTORY_ERROR (no sandbox), EXECUTION_ERROR. */
  async reset(data: ResetData): Promise<ObservationReply> {
    const count = this.env.tasks.length;
    let index: number | undefined;
    if (data.task_id !== undefined) {
      if (count === 0) throw new WireError('VALIDATION_ERROR', 'task_id given, but this env serves no dataset (tool mode)');
      if (data.task_id >= count) throw new WireError('VALIDATION_ERROR', `task_id ${data.task_id} is out of range: the dataset has ${count} tasks (0–${count - 1})`);
      index = data.task_id;
    } else if (data.seed !== undefined && count > 0) {
      index = Math.floor(seededRandom(data.seed)() * count);
    }
    this.abandon();
    const started = performance.now();
    let result;
    try {
      result = await this.env.reset(index === undefined ? {} : { task: index });
    } catch (error) {
      this.observer?.reset((performance.now() - started) / 1000, true);
      throw wireFailure(error, 'FACTORY_ERROR', 'reset');
    }
    this.observer?.reset((performance.now() - started) / 1000, false);
    this.observer?.started();
    const task = result.info.task;
    const found = task ? this.env.tasks.indexOf(task) : -1;
    this.taskId = found >= 0 ? found : null;
    this.task = task ? { task_id: this.taskId, query: task.query } : null;
    this.episodeId = data.episode_id ?? randomUUID();
    this.stepCount = 0;
    this.live = true;
    return capReply({ observation: { output: result.observation, exit_code: null, task: this.task, info: {} }, reward: null, done: false }, this.maxReplyBytes);
  }

  /** @throws WireError SESSION_ERROR (no episode under way), EXECUTION_ERROR (the env failed, not the sandbox). */
  async step(action: ActionData): Promise<ObservationReply> {
    if (!this.live) {
      throw new WireError('SESSION_ERROR', this.episodeId === null ? 'step before reset: send {"type": "reset"} first' : 'the episode is done: send {"type": "reset"} to start another');
    }
    let result: StepResult;
    const started = performance.now();
    try {
      result = await this.env.step(action.code);
    } catch (error) {
      this.observer?.step((performance.now() - started) / 1000, true);
      throw wireFailure(error, 'EXECUTION_ERROR', 'step');
    }
    this.observer?.step((performance.now() - started) / 1000, false);
    this.stepCount += 1;
    const done = result.terminated || result.truncated;
    if (done) {
      this.live = false;
      if (result.truncated) this.observer?.finished('truncated', result.info.truncation?.reason);
      else this.observer?.finished(isSolved(result.reward) ? 'solved' : 'unsolved');
    }
    return capReply(
      { observation: { output: result.observation, exit_code: result.info.exitCode, task: this.task, info: wireInfo(result) }, reward: result.reward, done },
      this.maxReplyBytes,
    );
  }

  state(): StateReply {
    return { episode_id: this.episodeId, step_count: this.stepCount, env: this.envName, task_id: this.taskId };
  }
}

/** The step's info in snake_case, with the parts a trainer reads (score and its named `reward_components` on submit, truncation when cut off). */
function wireInfo(result: StepResult): Record<string, unknown> {
  const { info } = result;
  return {
    action_executed: info.actionExecuted,
    duration_ms: info.durationMs,
    events: info.events,
    terminated: result.terminated,
    truncated: result.truncated,
    ...(info.score ? { score: info.score, reward_components: info.score.parts } : {}),
    ...(info.truncation ? { truncation: info.truncation } : {}),
  };
}

/** An env error as a wire error: a misuse is SESSION_ERROR; infrastructure keeps `code` (retryable). */
function wireFailure(error: unknown, code: 'FACTORY_ERROR' | 'EXECUTION_ERROR', what: string): WireError {
  if (error instanceof WireError) return error;
  if (error instanceof EnvStateError) return new WireError('SESSION_ERROR', error.message, {}, { cause: error });
  const message = error instanceof Error ? error.message : String(error);
  const cause = error instanceof IntercodeError ? { cause_code: error.code } : {};
  return new WireError(code, `${what} failed: ${message}`, cause, { cause: error });
}

/** A checkpoint or restore failure as a wire error: the env's CheckpointError keeps its code and details. */
function checkpointFailure(error: unknown): WireError {
  if (error instanceof CheckpointError) return new WireError(error.code as 'CHECKPOINT_REFUSED' | 'CHECKPOINT_UNSUPPORTED', error.message, { details: error.details }, { cause: error });
  return wireFailure(error, 'EXECUTION_ERROR', 'checkpoint');
}
