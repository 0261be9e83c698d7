export { checkListening, EnvServer, SERVER_DEFAULTS, type EnvServerOptions } from './env-server.js';
export type { EnvSlots } from './env-slots.js';
export { pooledEnvSlots, type PooledEnvSlotsOptions } from './pooled-env-slots.js';
export { EpisodeSession } from './episode-session.js';
export { SessionLeases, type EndReason, type Lease, type LeaseCounts } from './sessions.js';
export * from './protocol.js';
