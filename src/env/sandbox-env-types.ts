import type { Task } from '../datasets/index.js';
import type { ShellSession } from '../sandbox/shell/shell-session.js';
import type { CommandRunner } from '../sandbox/shell/types.js';
import type { LayerLimits, Sandbox, SandboxRuntime, SandboxSpec } from '../sandbox/types.js';
import type { EpisodeStep } from './episode-ledger.js';

export interface SandboxEnvConfig {
  runtime: SandboxRuntime;
  spec: SandboxSpec;
  /** Tasks; omitted or empty: tool mode (no query, `submit` scores 0). */
  dataset?: readonly Task[];
  /** Bounds on what a checkpoint copies (default {@link DEFAULT_LAYER_LIMITS}). */
  checkpointLimits?: LayerLimits;
  /** Seed for choosing random tasks on `reset()` without a task. */
  seed?: number;
}

/** What the episode has done so far, handed to the scorer on submit. */
export interface EpisodeState {
  task: Task;
  sandbox: Sandbox;
  /** The runner the agent's actions went through (the env's own kind: {@link SandboxEnv.openRunner}). */
  runner: CommandRunner;
  /** A shell of the harness's own in the episode's sandbox, for reading its state (never the agent's). */
  control: ShellSession;
  /** An untouched sandbox of the same image, when the workspace has one (see Workspace.reference). */
  reference?: Sandbox;
  /** The sandbox is new: every path it has written, this episode wrote (see Workspace.fromImage). */
  fromImage: boolean;
  /** The last observation (the query itself before any action, as in InterCode). */
  lastObservation: string;
  steps: readonly EpisodeStep[];
}
