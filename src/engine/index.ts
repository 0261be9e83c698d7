export { EpisodeEngine, describeEngine, parseSandboxMode, SANDBOX_MODES, type EngineMode, type EpisodeEngineOptions, type SandboxMode } from './episode-engine.js';
export { defaultParallel } from './parallel.js';
export { DEFAULT_KEEP_WARM_SECONDS, keepWarmMs } from './keep-warm.js';
export { longestFirst } from './longest-first.js';
