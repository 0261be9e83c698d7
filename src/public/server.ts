/**
 * `intercode-ts/server`: serving envs over OpenEnv's WebSocket and MCP from one's own
 * process, and the wire messages a client of one's own sends and reads.
 */
export { EnvServer, SERVER_DEFAULTS, type EnvServerOptions } from '../server/env-server.js';
export type { EnvSlots } from '../server/env-slots.js';
export { pooledEnvSlots, type PooledEnvSlotsOptions } from '../server/pooled-env-slots.js';
export {
  WIRE_ERROR_CODES,
  MESSAGE_TYPES,
  WireError,
  parseClientMessage,
  type WireErrorCode,
  type ClientMessage,
  type ServerMessage,
  type ResetData,
  type StepData,
  type ObservationReply,
  type StateReply,
  type CheckpointReply,
  type ForkData,
  type ForkReply,
} from '../server/protocol.js';
export { openApiDocument } from '../server/openapi.js';
