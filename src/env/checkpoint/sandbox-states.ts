import type { Task } from '../../datasets/index.js';
import type { Workspace, WorkspaceSource } from '../../pool/types.js';
import type { ShellState } from '../../sandbox/shell/shell-state.js';
import type { CommandRunner } from '../../sandbox/shell/types.js';
import type { LayerArchive, LayerLimits, Sandbox, SandboxRuntime, SandboxSpec } from '../../sandbox/types.js';
import type { EpisodeSnapshot } from '../episode-ledger.js';

/**
 * A sandbox env's episode (SandboxEnv.checkpoint): its sandbox's written files (an archive
 * on this host), its agent shell's state, its task, steps and last observation, and what
 * the env kind keeps of its own.
 */
export interface SandboxEpisodeState extends EpisodeBookkeeping {
  readonly spec: SandboxSpec;
  readonly layer: LayerArchive;
  readonly shell: ShellState;
  /** What the sandbox held outside its layer (src/sandbox/outside-layer.ts): a restore's must be equal. */
  readonly outside: string;
}

/** What every sandbox env's handle carries of its episode, however its state is carried. */
export interface EpisodeBookkeeping extends EpisodeSnapshot {
  /** What the env kind keeps of its episode beyond the above (plain data; CTF: the flag submitted). */
  readonly envEpisode: Readonly<Record<string, unknown>>;
}

/**
 * A sandbox env's episode carried by replay (SandboxEnv.replayObserver): its task, steps, last
 * observation and what the env kind keeps, and what the observer saw of its state at
 * checkpoint time; a restore replays the steps into a new sandbox and compares.
 */
export interface ReplayedEpisodeState extends EpisodeBookkeeping {
  readonly spec: SandboxSpec;
  /** What {@link ReplayObserver.observe} gave at checkpoint time. */
  readonly observed: unknown;
}

/**
 * How an env whose runner's state cannot be copied proves a replayed episode equal to the one
 * it continues: it reads the state of an episode's sandbox and runner as plain data, at
 * checkpoint time and again after a restore's replay, and says where two readings differ.
 */
export interface ReplayObserver<Seen = unknown> {
  /**
   * The episode's state in `sandbox` with `runner`, as plain data (equal states: equal data).
   * @throws CarryRefusal where it cannot be read exactly or passes `limits`.
   */
  observe(sandbox: Sandbox, runner: CommandRunner, limits: LayerLimits): Promise<Seen>;
  /** Where `replayed` differs from `recorded` (plain data naming the part), or undefined when equal. */
  difference(recorded: Seen, replayed: Seen): Record<string, unknown> | undefined;
}

/** Bounds a checkpoint's copy of the written layer (CHECKPOINT_REFUSED past them). */
export const DEFAULT_LAYER_LIMITS: LayerLimits = { maxBytes: 512 * 1024 ** 2, maxPaths: 100_000, timeoutMs: 30_000 };

/** The shell values {@link EpisodeCheckpoint} never carries (see shell-state.ts). */
export const SHELL_VALUES_NOT_CARRIED: readonly string[] = ['RANDOM and SRANDOM sequences', '$$, BASHPID and PPID', '$_', 'background jobs'];

/** How a sandbox env's checkpointers reach the env: what they need of it, and nothing else. */
export interface SandboxCheckpointHost {
  readonly envId: string;
  readonly runtime: SandboxRuntime;
  readonly limits: LayerLimits;
  /** The image this env scores: a checkpoint of it may be laid over one of this env's warm workspaces. */
  readonly image: string;
  /** Where this env's episodes get their workspaces (a replay's comes from here, as a reset's). */
  source(): WorkspaceSource;
  /** Where a layer may be laid over a ready workspace: the warm pool of the env that forked this one, else {@link source}. */
  spares(): WorkspaceSource;
  openRunner(sandbox: Sandbox): Promise<CommandRunner>;
  /** The env's per-task set-up of a workspace (SandboxEnv.prepareEpisode), for a replay. */
  prepare(workspace: Workspace, task: Task | null): Promise<void>;
  /** How the env's episodes are carried when its runner's state cannot be copied; undefined: by copy. */
  replayObserver(): ReplayObserver | undefined;
  /** @throws CheckpointError CHECKPOINT_REFUSED where this env cannot continue an episode of `spec` on `task`. */
  requireRestorable(spec: SandboxSpec, task: Task | null): void;
}
