import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Task } from '../datasets/index.js';
import { ConfigError, EnvStateError } from '../errors.js';
import type { ShellState } from '../sandbox/shell/shell-state.js';
import type { LayerArchive, LayerLimits, Sandbox, SandboxSpec } from '../sandbox/types.js';
import type { CommandRunner } from '../sandbox/shell/types.js';

/** What a checkpoint did not carry, and what it cost. */
export interface CheckpointInfo {
  /** Steps the episode had taken. */
  steps: number;
  /** The written layer: paths, bytes of regular files, and the archive's size on this host's disk. */
  layer: { paths: number; bytes: number; archiveBytes: number };
  /**
   * What the handle does not carry: the processes the episode left running (their command
   * lines; a restored episode has none), and the shell values no new shell can have.
   */
  dropped: { processes: string[]; shellValues: readonly string[] };
  /** How long the checkpoint took. */
  durationMs: number;
  /** An embedded SQLite episode's database, held in memory (bytes; 0 when it is the backend's unchanged data). */
  database?: { bytes: number };
  /** An episode carried by replay (see {@link ReplayObserver}): the actions a restore replays. Its `layer` is then all zeros: nothing is copied. */
  replay?: { actions: number };
}

/**
 * A live episode saved at one step: what its env kind needs to continue it (`state`; a
 * sandbox env's: {@link SandboxEpisodeState}), restorable into any env of the same kind, as
 * often as wanted, until it is released — by {@link CheckpointStore.release}, or when the
 * env that made it closes.
 */
export interface EpisodeCheckpoint<State = unknown> {
  readonly id: string;
  /** The env kind it continues in (Env.id). */
  readonly envId: string;
  readonly info: CheckpointInfo;
  /** @internal what a restore needs. */
  readonly state: State;
}

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
export interface EpisodeBookkeeping {
  readonly task: Task | null;
  readonly steps: readonly { action: string; observation: string }[];
  readonly lastObservation: string;
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

/**
 * Where an env's checkpoints live: one folder per handle under a folder of this store's own
 * in the system's temporary directory. A handle's folder holds its layer archive (about the
 * bytes the episode wrote: see CheckpointInfo.layer.archiveBytes); nothing is kept in
 * memory but the shell's state and the steps. Released handles' folders are removed at once,
 * the rest when the store closes.
 */
export class CheckpointStore {
  private root: string | undefined;
  private readonly live = new Map<string, EpisodeCheckpoint>();
  private next = 0;

  /** A new folder for a handle, with its id. */
  allocate(): { id: string; dir: string } {
    this.root ??= mkdtempSync(join(tmpdir(), 'intercode-checkpoints-'));
    const id = `ckpt-${process.pid}-${++this.next}`;
    return { id, dir: join(this.root, id) };
  }

  add<State>(checkpoint: EpisodeCheckpoint<State>): EpisodeCheckpoint<State> {
    this.live.set(checkpoint.id, checkpoint);
    owners.set(checkpoint.id, this);
    return checkpoint;
  }

  /** @throws EnvStateError when `checkpoint` was released (or is another store's and its owner closed). */
  requireLive(checkpoint: EpisodeCheckpoint): void {
    if (!owners.get(checkpoint.id)?.live.has(checkpoint.id)) throw new EnvStateError(`checkpoint ${checkpoint.id} was released`);
  }

  /** Removes `checkpoint`'s files; later restores of it fail. Idempotent. */
  release(checkpoint: EpisodeCheckpoint): void {
    if (!this.live.delete(checkpoint.id)) return;
    owners.delete(checkpoint.id);
    rmSync(join(this.root!, checkpoint.id), { recursive: true, force: true });
  }

  /** Handles alive now. */
  get size(): number {
    return this.live.size;
  }

  /** Releases every handle and removes the store's folder. */
  close(): void {
    for (const checkpoint of [...this.live.values()]) this.release(checkpoint);
    if (this.root) rmSync(this.root, { recursive: true, force: true });
    this.root = undefined;
  }
}

/** Which store owns each live handle (a handle restored in another env is checked against its owner). */
const owners = new Map<string, CheckpointStore>();

/** What {@link forkEpisode} needs of the env it forks: its checkpoint API. */
interface Forking<State> {
  checkpoint(): Promise<EpisodeCheckpoint<State>>;
  releaseCheckpoint(checkpoint: EpisodeCheckpoint<State>): void;
}

/** What {@link forkEpisode} needs of a child: that it restores a checkpoint and closes. */
interface ForkChild<State> {
  restore(checkpoint: EpisodeCheckpoint<State>): Promise<void>;
  close(): Promise<void>;
}

/**
 * `n` independent episodes continuing `env`'s from now: one checkpoint, restored into `n`
 * children `makeChild` gives, then released (the env's episode goes on unchanged). All or
 * none: when one child cannot be made or restored, those made are closed and the error thrown.
 * @throws ConfigError for an `n` that is not a positive integer; what checkpoint, makeChild and restore throw.
 */
export async function forkEpisode<State, Child extends ForkChild<State>>(
  env: Forking<State>,
  n: number,
  makeChild: () => Child,
): Promise<Child[]> {
  if (!Number.isInteger(n) || n < 1) throw new ConfigError('fork(n)', 'n must be a positive integer');
  const checkpoint = await env.checkpoint();
  const children: Child[] = [];
  try {
    for (let i = 0; i < n; i++) children.push(makeChild());
    await Promise.all(children.map((child) => child.restore(checkpoint)));
    return children;
  } catch (error) {
    await Promise.all(children.map((child) => child.close().catch(() => undefined)));
    throw error;
  } finally {
    env.releaseCheckpoint(checkpoint);
  }
}
