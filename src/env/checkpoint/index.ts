/** Checkpoint, restore, replay and fork of live episodes: the handles, the one flow every env kind uses, and its checkpointers. */
export { CheckpointStore, type CheckpointInfo, type EpisodeCheckpoint } from './handles.js';
export { EpisodeCheckpoints, type Checkpointer, type SavedPart } from './episode-checkpoints.js';
export { forkEpisode } from './fork-episode.js';
export { LayerCheckpointer } from './layer-checkpointer.js';
export { ReplayCheckpointer } from './replay-checkpointer.js';
export { SandboxCheckpoints, type SandboxCheckpoint } from './sandbox-checkpoints.js';
export { otherImage } from './refusals.js';
export { DEFAULT_LAYER_LIMITS, SHELL_VALUES_NOT_CARRIED, type EpisodeBookkeeping, type ReplayedEpisodeState, type ReplayObserver, type SandboxCheckpointHost, type SandboxEpisodeState } from './sandbox-states.js';
