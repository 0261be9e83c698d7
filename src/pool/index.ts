export type { Workspace, WorkspaceFactory, WorkspaceSource } from './types.js';
export { FreshWorkspaces } from './fresh-workspaces.js';
export { WorkspacePool, type PoolStats, type WorkspacePoolOptions } from './workspace-pool.js';
export { InPlaceRestorer, type RestoreOutcome } from './reuse/in-place-restore.js';
export { KeptWorkspace, type WorkspaceReset } from './kept-workspace.js';
