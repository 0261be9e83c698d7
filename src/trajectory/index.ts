/** Trajectories: writing our episode logs in InterCode's layout, reading InterCode's recorded runs. */
export { toIntercodeLog, writeEpisodeLog, type EpisodeLog, type EpisodeRecord } from './episode-log.js';
export { toRecordedEpisode, type RecordedEpisode } from './recorded-episode.js';
export { readRecordedTrajectories, episodesOf, type RecordedLayout } from './recorded-file.js';
