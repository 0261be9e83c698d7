import { rmSync } from 'node:fs';
import { EnvStateError } from '../../errors.js';
import type { EpisodeSnapshot } from '../episode-ledger.js';
import { CheckpointStore, type CheckpointInfo, type EpisodeCheckpoint } from './handles.js';

/**
 * How an env kind saves what its live episode holds beyond the bookkeeping (a sandbox's
 * written files and shell, a SQL session's database, an observer's reading to replay
 * against) and continues it: one implementation per way of carrying a state. Nothing partial
 * is handed out: `load` gives a live episode equal to the one saved, or throws.
 */
export interface Checkpointer<Live, Part> {
  /**
   * What `live` holds, as plain data a handle keeps; `dir`: where the handle's files go (made
   * by the checkpointer that writes some; removed when this throws).
   * @throws CheckpointError CHECKPOINT_UNSUPPORTED or CHECKPOINT_REFUSED (details.reason).
   */
  save(live: Live, episode: EpisodeSnapshot, dir: string): Promise<SavedPart<Part>>;
  /**
   * A live episode continuing `state` (what {@link save} gave, with the episode's bookkeeping).
   * @throws CheckpointError where it cannot be continued exactly.
   */
  load(state: Part & EpisodeSnapshot): Promise<Live>;
}

/** What a {@link Checkpointer} saved: its part of the handle's state, and what the handle's info says of it. */
export interface SavedPart<Part> {
  part: Part;
  info: Omit<CheckpointInfo, 'steps' | 'durationMs'>;
}

/**
 * An env's checkpoints: saved through a {@link Checkpointer} with the episode's bookkeeping
 * (`kept`: the snapshot and what the env kind keeps besides), held in a {@link CheckpointStore}
 * until released or the env closes, and checked before a restore (alive, of this env kind).
 */
export class EpisodeCheckpoints {
  private readonly store = new CheckpointStore();

  /** `envKind`: the env's id (read when used: a subclass sets it after the base is made). */
  constructor(private readonly envKind: () => string) {}

  async save<Live, Part, Kept extends EpisodeSnapshot>(checkpointer: Checkpointer<Live, Part>, live: Live, kept: Kept): Promise<EpisodeCheckpoint<Kept & Part>> {
    const started = performance.now();
    const { id, dir } = this.store.allocate();
    try {
      const { part, info } = await checkpointer.save(live, kept, dir);
      return this.store.add({
        id,
        envId: this.envKind(),
        info: { steps: kept.steps.length, ...info, durationMs: performance.now() - started },
        state: { ...kept, steps: [...kept.steps], ...part },
      });
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
  }

  /**
   * What `checkpoint` holds, for a restore in this env.
   * @throws EnvStateError for a released checkpoint or one of another env kind.
   */
  stateOf<State>(checkpoint: EpisodeCheckpoint<State>): State {
    this.store.requireLive(checkpoint);
    const kind = this.envKind();
    if (checkpoint.envId !== kind) throw new EnvStateError(`checkpoint ${checkpoint.id} is of ${checkpoint.envId}, not ${kind}`);
    return checkpoint.state;
  }

  /** Removes `checkpoint`'s files (a restore of it then fails). Idempotent. */
  release(checkpoint: EpisodeCheckpoint): void {
    this.store.release(checkpoint);
  }

  /** Releases every checkpoint this env made. */
  close(): void {
    this.store.close();
  }
}
