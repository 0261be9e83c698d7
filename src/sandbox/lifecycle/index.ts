export { SandboxRegistry, liveSandboxes, type DrainReport } from './registry.js';
export { installShutdownHandlers, shutdownUnderWay, windDownOnSignal, type ShutdownOptions } from './shutdown.js';
export { reapCrashedRuns } from './reaper.js';
