import { randomUUID } from 'node:crypto';
import { seededRandom } from '../env/episode.js';
import type { StepResult, TaskEnv } from '../env/types.js';
import { EnvStateError, IntercodeError } from '../errors.js';
import { capReply, WireError, type ActionData, type ObservationReply, type ResetData, type StateReply, type WireTask } from './protocol.js';
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

  constructor(
    private readonly env: TaskEnv,
    private readonly envName: string,
    /** The most bytes of JSON a reply may take ({@link capReply}). */
    private readonly maxReplyBytes: number,
    private readonly observer?: EpisodeObserver,
  ) {}

  /** The session is over: an episode still under way counts as abandoned. */
  end(): void {
    if (this.live) this.observer?.finished('abandoned');
    this.live = false;
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
    this.end();
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
