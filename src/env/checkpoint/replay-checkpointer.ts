import type { HeldWorkspace } from '../../pool/types.js';
import { renderObservation } from '../../sandbox/shell/types.js';
import { CarryRefusal } from '../../sandbox/carry-refusal.js';
import type { SandboxSpec } from '../../sandbox/types.js';
import type { EpisodeSnapshot } from '../episode-ledger.js';
import type { Checkpointer, SavedPart } from './episode-checkpoints.js';
import { notReplayable, refusedCheckpoint } from './refusals.js';
import type { ReplayObserver, SandboxCheckpointHost } from './sandbox-states.js';

/** What a {@link ReplayCheckpointer} keeps of an episode (see ReplayedEpisodeState). */
export interface ReplayPart {
  readonly spec: SandboxSpec;
  readonly observed: unknown;
}

/**
 * A sandbox episode carried by replay, for envs whose runner's state cannot be copied (a
 * runner that is no bash session): a checkpoint holds the steps and what the `observer` read
 * of the episode's state; a restore replays the steps into a workspace the env's source gives
 * (prepared for the task, as a reset), each observation compared with the recorded one, then
 * the observer's reading. Nothing is handed out unless all are equal.
 */
export class ReplayCheckpointer implements Checkpointer<HeldWorkspace, ReplayPart> {
  constructor(
    private readonly host: SandboxCheckpointHost,
    private readonly observer: ReplayObserver,
  ) {}

  async save({ workspace }: HeldWorkspace, episode: EpisodeSnapshot): Promise<SavedPart<ReplayPart>> {
    const observed = await this.observer.observe(workspace.sandbox, workspace.runner, this.host.limits).catch((error: unknown) => {
      if (error instanceof CarryRefusal) throw refusedCheckpoint(error);
      throw error;
    });
    return {
      part: { spec: workspace.sandbox.spec, observed },
      info: { layer: { paths: 0, bytes: 0, archiveBytes: 0 }, dropped: { processes: [], shellValues: [] }, replay: { actions: episode.steps.length } },
    };
  }

  /**
   * @throws CheckpointError CHECKPOINT_REFUSED (reason `not-replayable`, `details.step`: the
   *   first step whose observation differed, or the step count when the state after them did).
   */
  async load({ spec, task, steps, observed }: ReplayPart & EpisodeSnapshot): Promise<HeldWorkspace> {
    this.host.requireRestorable(spec, task);
    const source = this.host.source();
    const workspace = await source.acquire();
    try {
      await this.host.prepare(workspace, task);
      for (const [step, { action, observation }] of steps.entries()) {
        const replayed = renderObservation(await workspace.runner.run(action));
        if (replayed !== observation) throw notReplayable(step, { part: 'observation', recorded: observation.slice(0, 500), replayed: replayed.slice(0, 500) });
      }
      const seen = await this.observer.observe(workspace.sandbox, workspace.runner, this.host.limits);
      const difference = this.observer.difference(observed, seen);
      if (difference) throw notReplayable(steps.length, difference);
    } catch (error) {
      source.release(workspace);
      if (error instanceof CarryRefusal) throw refusedCheckpoint(error);
      throw error;
    }
    return { workspace, returnTo: source };
  }
}
