import type { BuildLog } from '../../images/image-builder.js';
import type { ImageRecipe } from '../../images/recipe.js';
import type { HealthCheck } from '../health.js';
import type { SandboxRuntime, SandboxSettings } from '../types.js';

/** One target of `--engine`: a Docker engine with its capacity weight, or a Kubernetes cluster (weight 1). */
export interface EngineTarget {
  /** `unix:///path`, `/path` (a socket), `tcp://host:port`, `http(s)://host:port`; or `k8s[:CONTEXT[/NAMESPACE]]`. */
  endpoint: string;
  /** Share of the sandboxes it gets relative to the others (2 = twice as many as a 1). */
  weight: number;
}

/**
 * How a backend opens its runtime: what every sandbox is made with, where engine events go,
 * and how the Docker backend watches several engines (the health fields; other backends
 * take `sandboxes` and `log` only).
 */
export interface MultiEngineOptions {
  /** How often every engine is pinged (up ones to notice death, down ones to notice return). Default 2 s. */
  healthIntervalMs: number;
  /** A ping not answered within this counts as failed. Default 3 s. */
  pingTimeoutMs: number;
  /** Consecutive failed periodic pings that mark an engine down (a failed create needs one). Default 2. */
  failuresBeforeDown: number;
  /** Engine state changes and image provisioning. Default: nowhere. */
  log: (line: string) => void;
  /** What every engine's sandboxes are made with (`--runtime`, `--disk-limit`). Default: each engine's defaults. */
  sandboxes: SandboxSettings;
}

/** One engine as {@link MultiEngineRuntime.status} reports it. */
export interface EngineStatus {
  endpoint: string;
  weight: number;
  up: boolean;
  /** Sandboxes it holds now. */
  live: number;
  /** Sandboxes created on it so far. */
  created: number;
  /** Times it was found down. */
  downs: number;
}

/** What {@link SandboxBackend.open} is given: the sandboxes' settings always, the rest where the caller has a say. */
export type BackendOptions = Partial<MultiEngineOptions> & Pick<MultiEngineOptions, 'sandboxes'>;

/** A backend's runtime opened over a run's targets, with the image provisioning that goes with it. */
export interface OpenedBackend {
  readonly runtime: SandboxRuntime;
  /** Builds or finds `recipe`'s image where the sandboxes run. @returns the tag to put in a SandboxSpec. @throws ImageError */
  ensureImage(recipe: ImageRecipe, log: BuildLog): Promise<string>;
  /** The engine's id of an image tag; undefined where no single engine is asked, or it has no such image. */
  imageId(tag: string): Promise<string | undefined>;
  /** Each engine's state and share of the sandboxes, where the backend tracks them (several Docker engines). */
  status(): EngineStatus[] | undefined;
  /** Stops what the runtime keeps running (health checks, a pod watch). Sandboxes are left as they are. */
  close(): void;
}

/** What `intercode cleanup` asks a backend to remove at one target. */
export interface CleanupRequest {
  /** Also the images intercode built (where the backend holds images). */
  images: boolean;
  /** Only the sandboxes of runs of this host that crashed (and kept-warm ones past their time). */
  deadRunsOnly: boolean;
  /** Only the sandboxes kept warm for the next command. */
  warmOnly: boolean;
  /** Only what one test run made (its test label; tests use it to touch nothing else). */
  testRun?: string;
}

/** What a backend removed at one target, and the line that tells the user. */
export interface CleanupReport {
  containers: number;
  images: number;
  summary: string;
}

/**
 * A place sandboxes run (a Docker engine, a Kubernetes cluster): everything the harness
 * needs of it, so that a command picks a backend by its `--engine` value from
 * {@link SANDBOX_BACKENDS} and never asks which one it is. A new backend is one more
 * descriptor in that list, passing test/integration/backend-conformance.test.ts.
 */
export interface SandboxBackend {
  /** Its name in messages: `docker`, `kubernetes`. */
  readonly name: string;
  /** Whether its targets may share a run with other targets (a cluster places its own pods: no). */
  readonly combinable: boolean;
  /** Whether one `--engine` value (or an endpoint) is this backend's: the first backend of the list that matches takes it. */
  matches(value: string): boolean;
  /**
   * Parses one `--engine` value this backend {@link matches}.
   * @throws ConfigError naming `flag` when it is malformed.
   */
  parseTarget(value: string, flag: string): EngineTarget;
  /**
   * Opens the runtime creating sandboxes over `targets` (all this backend's), with explicit
   * settings (`options.sandboxes`): nothing is read from the environment.
   * @throws EngineUnreachableError when nothing answers.
   */
  open(targets: readonly EngineTarget[], options: BackendOptions): Promise<OpenedBackend>;
  /**
   * Removes what intercode made at `endpoint` (found by label).
   * @throws EngineUnreachableError when it does not answer.
   */
  cleanup(endpoint: string, request: CleanupRequest): Promise<CleanupReport>;
  /** Removes the sandboxes that crashed runs of this host left at `endpoint`. @returns how many; 0 when it does not answer. */
  reapCrashedRuns(endpoint: string, options?: { testRun?: string }): Promise<number>;
  /**
   * The checks `intercode doctor` adds for `endpoint`, beyond its own of the host and the
   * default Docker engine: `required` (the user named it) makes a problem fail, else it
   * warns. None on a backend whose checks are doctor's own (Docker's).
   */
  doctorChecks?(endpoint: string, required: boolean): Promise<HealthCheck[]>;
  /** The target doctor checks when none is named, from the user's environment variables (read at the CLI); undefined: none. */
  impliedDoctorTarget?(env: Readonly<Record<string, string | undefined>>): string | undefined;
}
