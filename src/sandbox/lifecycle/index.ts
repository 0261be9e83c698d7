export { SandboxRegistry, liveSandboxes, type DrainReport } from './registry.js';
export { installShutdownHandlers, shutdownUnderWay, type ShutdownOptions } from './shutdown.js';
export { reapCrashedRuns } from './reaper.js';
