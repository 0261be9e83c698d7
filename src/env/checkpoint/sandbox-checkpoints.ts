import type { HeldWorkspace } from '../../pool/types.js';
import { CheckpointError } from '../../errors.js';
import { EpisodeCheckpoints } from './episode-checkpoints.js';
import type { EpisodeCheckpoint } from './handles.js';
import { LayerCheckpointer } from './layer-checkpointer.js';
import { ReplayCheckpointer } from './replay-checkpointer.js';
import type { EpisodeBookkeeping, ReplayedEpisodeState, SandboxCheckpointHost, SandboxEpisodeState } from './sandbox-states.js';

/** A sandbox env's checkpoint handle: its episode carried by copy, or by replay. */
export type SandboxCheckpoint = EpisodeCheckpoint<SandboxEpisodeState | ReplayedEpisodeState>;

/**
 * A sandbox env's checkpoints: its episodes carried by copy ({@link LayerCheckpointer}), or
 * by replay where the env has a replay observer ({@link ReplayCheckpointer}), held until
 * released or the env closes.
 */
export class SandboxCheckpoints {
  private readonly handles: EpisodeCheckpoints;
  private readonly byCopy: LayerCheckpointer;

  constructor(private readonly host: SandboxCheckpointHost) {
    this.handles = new EpisodeCheckpoints(() => host.envId);
    this.byCopy = new LayerCheckpointer(host);
  }

  /** Saves the live episode on `held` with its bookkeeping `kept`. */
  save(held: HeldWorkspace, kept: EpisodeBookkeeping): Promise<SandboxCheckpoint> {
    const observer = this.host.replayObserver();
    return observer ? this.handles.save(new ReplayCheckpointer(this.host, observer), held, kept) : this.handles.save(this.byCopy, held, kept);
  }

  /**
   * A workspace continuing `checkpoint`'s episode, and the bookkeeping to continue it with.
   * @throws EnvStateError for a released checkpoint or one of another env kind; CheckpointError
   *   CHECKPOINT_UNSUPPORTED, or CHECKPOINT_REFUSED when the state could not be given exactly.
   */
  async load(checkpoint: SandboxCheckpoint): Promise<{ held: HeldWorkspace; state: EpisodeBookkeeping }> {
    const state = this.handles.stateOf(checkpoint);
    if (!('observed' in state)) return { held: await this.byCopy.load(state), state };
    const observer = this.host.replayObserver();
    if (!observer) throw new CheckpointError('CHECKPOINT_UNSUPPORTED', `${this.host.envId} cannot continue an episode by replay`);
    return { held: await new ReplayCheckpointer(this.host, observer).load(state), state };
  }

  release(checkpoint: EpisodeCheckpoint): void {
    this.handles.release(checkpoint);
  }

  close(): void {
    this.handles.close();
  }
}
