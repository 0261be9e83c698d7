/**
 * Typed errors. Every error the project raises is an {@link IntercodeError} with a
 * machine-readable `code`, structured `details` and a `retryable` flag, so callers never
 * parse message strings. Library errors are wrapped with `{ cause }`.
 *
 * Failed *actions* (a non-zero exit code, a syntax error, a command that timed out) are
 * never errors: they are observations. These classes are for broken infrastructure and
 * bad input.
 */

export type IntercodeErrorCode =
  | 'ENGINE_UNREACHABLE'
  | 'IMAGE_BUILD_FAILED'
  | 'IMAGE_MISSING'
  | 'SANDBOX_UNAVAILABLE'
  | 'SANDBOX_LOST'
  | 'STATE_UNREADABLE'
  | 'DATASET_INVALID'
  | 'TRAJECTORY_INVALID'
  | 'CONFIG_INVALID'
  | 'UNKNOWN_ENV'
  | 'ENV_STATE'
  | 'MODEL_UNAVAILABLE'
  | 'MODEL_REQUEST_REJECTED'
  | 'SETUP_FAILED'
  | 'STORAGE_SETUP_FAILED'
  | 'EPISODE_CANCELLED'
  | 'EPISODE_UNSCORABLE'
  | 'CHECKPOINT_REFUSED'
  | 'CHECKPOINT_UNSUPPORTED'
  | 'WORKER_CRASHED'
  | 'GOLDS_FAILING';

const RETRYABLE: Record<IntercodeErrorCode, boolean> = {
  ENGINE_UNREACHABLE: true,
  IMAGE_BUILD_FAILED: false,
  IMAGE_MISSING: false,
  SANDBOX_UNAVAILABLE: true,
  SANDBOX_LOST: true,
  STATE_UNREADABLE: false,
  DATASET_INVALID: false,
  TRAJECTORY_INVALID: false,
  CONFIG_INVALID: false,
  UNKNOWN_ENV: false,
  ENV_STATE: false,
  MODEL_UNAVAILABLE: true,
  MODEL_REQUEST_REJECTED: false,
  SETUP_FAILED: false,
  STORAGE_SETUP_FAILED: false,
  EPISODE_CANCELLED: false,
  EPISODE_UNSCORABLE: false,
  CHECKPOINT_REFUSED: false,
  CHECKPOINT_UNSUPPORTED: false,
  WORKER_CRASHED: false,
  GOLDS_FAILING: false,
};

export class IntercodeError extends Error {
  readonly code: IntercodeErrorCode;
  readonly details: Readonly<Record<string, unknown>>;
  readonly retryable: boolean;

  constructor(
    code: IntercodeErrorCode,
    message: string,
    options: { details?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.details = options.details ?? {};
    this.retryable = RETRYABLE[code];
  }
}

/** No Docker engine answered at the given endpoint. */
export class EngineUnreachableError extends IntercodeError {
  constructor(endpoint: string, cause?: unknown) {
    super(
      'ENGINE_UNREACHABLE',
      `No Docker engine answers at ${endpoint}. Run \`npx intercode setup\`: it installs and starts one ` +
        '(as root on Debian/Ubuntu) or prints the commands for this machine; `npx intercode doctor` says what is missing.',
      { details: { endpoint }, cause },
    );
  }
}

/** A Kubernetes apiserver did not answer (or kept failing) while `what` was asked of it. */
export class ClusterUnreachableError extends IntercodeError {
  constructor(server: string, what: string, cause?: unknown) {
    super('ENGINE_UNREACHABLE', `The Kubernetes apiserver at ${server} did not answer (${what}); check KUBECONFIG and that the cluster is up (\`kubectl version\`).`, {
      details: { server, what },
      cause,
    });
  }
}

/**
 * A sandbox could not be created, its container died or vanished mid-episode, or what the
 * scorer reads from it did not come back whole (STATE_UNREADABLE: a probe timed out or its
 * output was cut).
 */
export class SandboxError extends IntercodeError {
  constructor(
    code: 'SANDBOX_UNAVAILABLE' | 'SANDBOX_LOST' | 'STATE_UNREADABLE',
    message: string,
    options: { details?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(code, message, options);
  }
}

/** An image failed to build, or a required image is missing. */
export class ImageError extends IntercodeError {
  constructor(
    code: 'IMAGE_BUILD_FAILED' | 'IMAGE_MISSING',
    message: string,
    options: { details?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(code, message, options);
  }
}

/** Where in a data file a problem was found. `record` is 1-based; `line` too; `episode` is a key in a keyed file. */
export interface DataLocation {
  file: string;
  record?: number;
  line?: number;
  episode?: string;
  field?: string;
}

function describeLocation(loc: DataLocation): string {
  const parts = [loc.file];
  if (loc.line !== undefined) parts.push(`line ${loc.line}`);
  if (loc.record !== undefined) parts.push(`record ${loc.record}`);
  if (loc.episode !== undefined) parts.push(`episode "${loc.episode}"`);
  if (loc.field !== undefined) parts.push(`field "${loc.field}"`);
  return parts.join(', ');
}

/** A problem at a place in a data file; the message starts with that place. */
abstract class LocatedDataError extends IntercodeError {
  readonly location: DataLocation;
  constructor(code: 'DATASET_INVALID' | 'TRAJECTORY_INVALID', location: DataLocation, problem: string, cause?: unknown) {
    super(code, `${describeLocation(location)}: ${problem}`, { details: { ...location, problem }, cause });
    this.location = location;
  }
}

/** A dataset file is missing, unreadable or malformed. The message names file, record and field. */
export class DatasetError extends LocatedDataError {
  constructor(location: DataLocation, problem: string, cause?: unknown) {
    super('DATASET_INVALID', location, problem, cause);
  }
}

/** A recorded trajectory file is missing or malformed. */
export class TrajectoryError extends LocatedDataError {
  constructor(location: DataLocation, problem: string, cause?: unknown) {
    super('TRAJECTORY_INVALID', location, problem, cause);
  }
}

/** A configuration value is out of range or of the wrong type. */
export class ConfigError extends IntercodeError {
  constructor(option: string, problem: string) {
    super('CONFIG_INVALID', `${option} ${problem}`, { details: { option, problem } });
  }
}

/**
 * `intercode run` found that most golds of a task file do not solve their tasks in the env:
 * the file is likely for another env, or made with settings (a database, a testbed) this run
 * lacks. `details`: solved, scored, the task file, the env.
 */
export class GoldsFailingError extends IntercodeError {
  constructor(message: string, details: Record<string, unknown>) {
    super('GOLDS_FAILING', message, { details });
  }
}

/** `value` as one of `choices`. @throws ConfigError naming `option`, the choices and the value. */
export function oneOf<T extends string>(option: string, value: string, choices: readonly T[]): T {
  if (!(choices as readonly string[]).includes(value)) throw new ConfigError(option, `must be one of ${choices.join(', ')}, got "${value}"`);
  return value as T;
}

/** `make()` was given an environment id that is not registered. */
export class UnknownEnvError extends IntercodeError {
  constructor(id: string, known: readonly string[]) {
    super('UNKNOWN_ENV', `Unknown environment id "${id}". Registered ids: ${known.join(', ')}`, {
      details: { id, known },
    });
  }
}

/** A method was called in the wrong episode state (step before reset, step after close…). */
export class EnvStateError extends IntercodeError {
  constructor(message: string) {
    super('ENV_STATE', message);
  }
}

/**
 * A model endpoint failed: `MODEL_UNAVAILABLE` when it could not be reached or kept
 * answering 429/5xx after every retry, `MODEL_REQUEST_REJECTED` when it refused the
 * request (4xx) or answered with something that is not a chat completion.
 */
export class ModelError extends IntercodeError {
  constructor(
    code: 'MODEL_UNAVAILABLE' | 'MODEL_REQUEST_REJECTED',
    message: string,
    options: { details?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(code, message, options);
  }
}

/** An episode was stopped before its end because whoever asked for it went away (a rollout client that disconnected, a server shutting down). */
export class EpisodeCancelledError extends IntercodeError {
  constructor(why: string) {
    super('EPISODE_CANCELLED', `the episode was cancelled: ${why}`, { details: { why } });
  }
}

/** A storage area for an engine (a loop-mounted btrfs data root) could not be made or removed. */
export class StorageError extends IntercodeError {
  constructor(message: string, options: { details?: Record<string, unknown>; cause?: unknown } = {}) {
    super('STORAGE_SETUP_FAILED', message, options);
  }
}

/**
 * A step of `intercode setup` failed, or the machine is in a situation setup does not
 * change itself: `details.step` names the step (or "plan"), `details.commands` what to run.
 */
export class SetupError extends IntercodeError {
  constructor(step: string, problem: string, commands: readonly string[] = [], cause?: unknown) {
    super('SETUP_FAILED', `setup: ${step}: ${problem}`, { details: { step, problem, commands }, cause });
  }
}

/** Why a finished episode got no reward: its verifier timed out, wrote no reward, wrote one that is not a number, or could not run. */
export type UnscorableReason = 'verifier-timeout' | 'reward-missing' | 'reward-invalid' | 'verifier-error';

/**
 * An episode ended but its scorer could not give it a reward (a task directory's verifier
 * timed out, wrote no reward file, wrote something that is not a number). The env ends the
 * episode truncated with `reason` and this message, never scored as 0.
 */
export class EpisodeUnscorableError extends IntercodeError {
  constructor(
    readonly reason: UnscorableReason,
    message: string,
    details: Record<string, unknown> = {},
  ) {
    super('EPISODE_UNSCORABLE', message, { details: { reason, ...details } });
  }
}

/**
 * An episode could not be checkpointed, restored or forked exactly. `CHECKPOINT_REFUSED`:
 * this state cannot be carried exactly (`details.reason`: a socket, a layer past the limits,
 * a shell whose builtins are overridden, …); no partial handle or branch is handed out.
 * `CHECKPOINT_UNSUPPORTED`: this env, runner or runtime cannot checkpoint at all.
 */
export class CheckpointError extends IntercodeError {
  constructor(code: 'CHECKPOINT_REFUSED' | 'CHECKPOINT_UNSUPPORTED', message: string, options: { details?: Record<string, unknown>; cause?: unknown } = {}) {
    super(code, message, options);
  }
}

/**
 * A worker thread that held envs (a shard of a threaded VecEnv) died: every step, reset or
 * score asked of its envs fails with this, after the sandboxes it had made are removed.
 * `details.sandboxesRemoved` says how many were.
 */
export class WorkerCrashedError extends IntercodeError {
  constructor(threadId: number, envIds: readonly number[], sandboxesRemoved: number, cause: unknown) {
    const why = cause instanceof Error ? cause.message : String(cause);
    super('WORKER_CRASHED', `the worker thread ${threadId} holding envs ${envIds.join(', ')} died (${why}); ${sandboxesRemoved} sandbox(es) it had made were removed`, {
      details: { threadId, envIds: [...envIds], sandboxesRemoved },
      cause,
    });
  }
}
