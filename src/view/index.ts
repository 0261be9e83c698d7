/** `intercode view`: every run and episode this project wrote, as local web pages. */
export { discoverRuns, type Catalogue, type RunFolder, type TrainingRun } from './discover.js';
export { EpisodeLogFolderSource, JsonLinesSource, matches, OUTCOMES, ResultLogSource, type EpisodeEntry, type EpisodeFilter, type EpisodePage, type EpisodeSource, type Outcome, type SummaryState } from './episode-source.js';
export { clip, escapeHtml, showText, visibleControls } from './html-text.js';
export { readLineAt, readLines, type RawLine } from './line-file.js';
export { writeStaticSite, type StaticSiteResult } from './static-site.js';
export type { RunFigures } from './tally.js';
export { episodeFormat, episodesIn, toViewEpisode, type EpisodeFormat, type ViewEpisode, type ViewTurn } from './view-episode.js';
export { PAGE_SIZE, SERVER_LINKS, ViewServer, type ViewServerOptions } from './view-server.js';
export { VIEW_CSP } from './view-style.js';
