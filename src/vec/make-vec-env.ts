import { SandboxEnv } from '../env/sandbox-env.js';
import type { TaskEnv } from '../env/types.js';
import { ConfigError } from '../errors.js';
import { InPlaceRestorer } from '../pool/in-place-restore.js';
import { WorkspacePool, type WorkspacePoolOptions } from '../pool/workspace-pool.js';
import { VecEnv, type VecEnvOptions } from './vec-env.js';

/**
 * How a used sandbox becomes clean again. `restore`: in place (see InPlaceRestorer; the
 * default, measured faster); `replace`: removed, and a new one created in its stead.
 */
export type CleanMode = 'restore' | 'replace';

export interface PooledVecEnvOptions extends VecEnvOptions {
  clean?: CleanMode;
  pool?: Partial<Omit<WorkspacePoolOptions, 'restore'>>;
}

/**
 * A VecEnv over `envs` (all of one kind and configuration) that share one warm
 * {@link WorkspacePool}: each reset hands over a ready workspace, and used ones are cleaned
 * off the hot path. Closing the VecEnv closes the envs, then the pool.
 */
export function pooledVecEnv(envs: readonly SandboxEnv[], options: PooledVecEnvOptions): { vec: VecEnv; pool: WorkspacePool } {
  const first = envs[0];
  if (!first) throw new Error('pooledVecEnv needs at least one env');
  const factory = first.workspaceFactory();
  const restorer = (options.clean ?? 'restore') === 'restore' ? new InPlaceRestorer(factory) : undefined;
  const pool = new WorkspacePool(factory, {
    borrowers: envs.length,
    minIdle: Math.max(2, Math.ceil(envs.length / 4)),
    ...options.pool,
    ...(restorer ? { restore: (workspace) => restorer.restore(workspace) } : {}),
  });
  for (const env of envs) env.useWorkspaces(pool);
  const vec = new VecEnv(envs, {
    ...options,
    onClose: async () => {
      await pool.close();
      await restorer?.close();
    },
  });
  return { vec, pool };
}

/**
 * The VecEnv for a CLI command's envs (as an EnvCli created them): SandboxEnvs (bash, python,
 * ctf) share a warm pool whose used sandboxes are restored in place ({@link pooledVecEnv});
 * any other TaskEnv (SQL: a session on its own server, no sandbox per episode) is stepped as
 * it is.
 * @throws ConfigError when `envs` mixes SandboxEnvs with other envs, or is empty.
 */
export function vecEnvFor(envs: readonly TaskEnv[], options: PooledVecEnvOptions): VecEnv {
  const sandboxed = envs.filter((env): env is SandboxEnv => env instanceof SandboxEnv);
  if (sandboxed.length === envs.length && envs.length > 0) return pooledVecEnv(sandboxed, options).vec;
  if (sandboxed.length > 0) throw new ConfigError('envs', `mixes ${sandboxed.length} sandbox envs with ${envs.length - sandboxed.length} others; one VecEnv holds one kind`);
  return new VecEnv(envs, options);
}
