import { ConfigError } from '../errors.js';
import { toIntercodeLog, writeEpisodeLog } from '../trajectory/index.js';
import type { EpisodeCheckpoint } from './checkpoint/index.js';
import type { EndedEpisode } from './episode-ledger.js';
import { TaskEnvWrapper } from './task-env-wrapper.js';
import { isCheckpointable, isForkable, type CheckpointableEnv, type ForkableEnv, type StepOptions, type StepResult, type TaskEnv } from './types.js';

/**
 * An env that says how its last episode ended, as an InterCode log records it: what
 * {@link EpisodeLogWriter} writes. Both env kinds are (SandboxEnv, SqlEnv): they keep the
 * episode's steps anyway, for their scorers and their checkpoints.
 */
export interface EpisodeRecordingEnv extends CheckpointableEnv, ForkableEnv {
  /** InterCode's `environment` field for this env (`ic_bash`, `ic_sql`, …). */
  readonly logName: string;
  /** The episode the last step ended; undefined while one is under way, or when it had no task. */
  endedEpisode(): EndedEpisode | undefined;
}

/** Whether `env` records its episodes (see {@link EpisodeRecordingEnv}). */
export function isEpisodeRecording(env: TaskEnv): env is EpisodeRecordingEnv {
  const candidate = env as Partial<EpisodeRecordingEnv>;
  return typeof candidate.logName === 'string' && typeof candidate.endedEpisode === 'function' && isCheckpointable(env) && isForkable(env);
}

/**
 * Writes one InterCode-format log into `dir` for every episode of the env it wraps that ends
 * (submitted, skipped or cut off), as Gymnasium's `RecordEpisodeStatistics` records
 * statistics: the env knows nothing of logs. What is written is the env's own account of the
 * episode, so the log of a restored or forked episode holds the steps taken before its
 * checkpoint, and no second copy of the steps is kept here. The log is in `dir` when the
 * ending step returns; a write that fails throws from that step (TrajectoryError). Episodes
 * without a task (tool mode) are not logged. Forked children are wrapped too.
 */
export class EpisodeLogWriter extends TaskEnvWrapper implements CheckpointableEnv, ForkableEnv {
  constructor(
    private readonly recording: EpisodeRecordingEnv,
    readonly dir: string,
  ) {
    super(recording);
  }

  override async step(action: string, options?: StepOptions): Promise<StepResult> {
    const result = await this.recording.step(action, options);
    const ended = result.terminated || result.truncated ? this.recording.endedEpisode() : undefined;
    if (ended) await writeEpisodeLog(this.dir, toIntercodeLog({ environment: this.recording.logName, ...ended }));
    return result;
  }

  checkpoint(): Promise<EpisodeCheckpoint> {
    return this.recording.checkpoint();
  }

  restore(checkpoint: EpisodeCheckpoint): Promise<void> {
    return this.recording.restore(checkpoint);
  }

  releaseCheckpoint(checkpoint: EpisodeCheckpoint): void {
    this.recording.releaseCheckpoint(checkpoint);
  }

  /** The wrapped env's children, each writing its logs into the same folder. */
  async fork(n: number): Promise<TaskEnv[]> {
    return (await this.recording.fork(n)).map((child) => writeEpisodeLogs(child, this.dir));
  }
}

/**
 * `env`, writing one InterCode log per finished episode into `dir` (see {@link EpisodeLogWriter}).
 * @throws ConfigError when `env` keeps no account of its episodes to write from.
 */
export function writeEpisodeLogs(env: TaskEnv, dir: string): EpisodeLogWriter {
  if (!isEpisodeRecording(env)) throw new ConfigError('--trajectories', `the ${env.id} env keeps no account of its episodes to write logs from`);
  return new EpisodeLogWriter(env, dir);
}
