import type { SandboxEnv } from '../env/sandbox-env.js';
import { WorkspacePool, type WorkspacePoolOptions } from '../pool/workspace-pool.js';
import { VecEnv, type VecEnvOptions } from './vec-env.js';

/**
 * A VecEnv over `envs` (all of one kind and configuration) that share one warm
 * {@link WorkspacePool}: each reset hands over a ready workspace. Closing the VecEnv closes
 * the envs, then the pool.
 */
export function pooledVecEnv(envs: readonly SandboxEnv[], options: VecEnvOptions & { pool?: Partial<WorkspacePoolOptions> }): { vec: VecEnv; pool: WorkspacePool } {
  const first = envs[0];
  if (!first) throw new Error('pooledVecEnv needs at least one env');
  const pool = new WorkspacePool(first.workspaceFactory(), { borrowers: envs.length, minIdle: Math.max(2, Math.ceil(envs.length / 4)), ...options.pool });
  for (const env of envs) env.useWorkspaces(pool);
  const vec = new VecEnv(envs, { ...options, onClose: () => pool.close() });
  return { vec, pool };
}
