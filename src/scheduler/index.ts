export { EpisodeScheduler, describeScheduler, parseSandboxMode, SANDBOX_MODES, type SchedulerMode, type EpisodeSchedulerOptions, type SandboxMode } from './episode-scheduler.js';
export { defaultParallel } from './parallel.js';
export { DEFAULT_KEEP_WARM_SECONDS, keepWarmMs } from './keep-warm.js';
export { longestFirst } from './longest-first.js';
