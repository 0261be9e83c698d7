import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EnvStateError } from '../../errors.js';

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
