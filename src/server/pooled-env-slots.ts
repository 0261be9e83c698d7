import { SandboxEnv } from '../env/sandbox-env.js';
import { unwrapped } from '../env/task-env-wrapper.js';
import type { TaskEnv } from '../env/types.js';
import { ConfigError } from '../errors.js';
import { FreshWorkspaces } from '../pool/fresh-workspaces.js';
import { poolableSandboxEnvs, sharedPool } from '../vec/index.js';
import type { EnvSlots } from './env-slots.js';

export interface PooledEnvSlotsOptions {
  /** Workspaces made ahead, before any session (a session past them gets one made when it starts). Default: the `sessions` rule of spareWorkspaces, min(4, envs). */
  spares?: number;
}

/**
 * {@link EnvSlots} over envs made once at start (one per possible session). Envs that can
 * share workspaces (bash, python) share one warm WorkspacePool (sharedPool) whose used
 * sandboxes are restored in place, as `collect` and `eval` do (see vecEnvFor): `spares` are
 * made ahead, a session past them gets one made when it starts, and at most `envs + spares +
 * 1` sandboxes exist (the one more: the restorer's pristine template). Other SandboxEnvs (CTF) get a new sandbox per reset,
 * removed when the session ends; envs without sandboxes of their own (SQL sessions on a
 * shared server) are reset by their next session.
 * @throws ConfigError when `envs` is empty.
 */
export function pooledEnvSlots(envName: string, envs: readonly TaskEnv[], options: PooledEnvSlotsOptions = {}): EnvSlots {
  if (envs.length === 0) throw new ConfigError('envs', 'must hold at least one env');
  // Envs in use, the spares, and the restorer's pristine template bound the sandboxes.
  const poolable = poolableSandboxEnvs(envs);
  const { pool, restorer, sandboxLimit } = poolable
    ? sharedPool(poolable, { workload: 'sessions', ...(options.spares !== undefined ? { pool: { minIdle: options.spares } } : {}) })
    : { pool: undefined, restorer: undefined, sandboxLimit: undefined };
  const free = [...envs];
  const lent = new Set<TaskEnv>();

  /** Ends the env's episode and hands its sandbox back, keeping the env usable for the next session. */
  const returnSandbox = async (slotEnv: TaskEnv): Promise<void> => {
    const env = unwrapped(slotEnv);
    if (!(env instanceof SandboxEnv)) return;
    // useWorkspaces() retires the episode's workspace to its source first: to the pool
    // (restored off the hot path) or, for an env's own FreshWorkspaces, removed.
    if (pool && env.sharesWorkspaces) env.useWorkspaces(pool);
    else env.useWorkspaces(new FreshWorkspaces(env.workspaceFactory()), { own: true });
  };

  return {
    envName,
    capacity: envs.length,
    sandboxLimit,
    get inUse() {
      return lent.size;
    },
    take() {
      const env = free.pop();
      if (env) lent.add(env);
      return env;
    },
    async give(env) {
      if (!lent.has(env)) return;
      try {
        await returnSandbox(env);
      } catch {
        // An env that cannot hand its sandbox back still frees its slot; the pool replaces what it lost.
      }
      lent.delete(env);
      free.push(env);
    },
    async ready() {
      await pool?.ready();
    },
    poolCounts() {
      if (!pool) return undefined;
      const stats = pool.stats();
      return { warm: stats.idle, inUse: stats.lent, restoring: stats.borrowed - stats.lent, creating: stats.pending, created: stats.created, lostOnBorrow: stats.rejectedOnBorrow };
    },
    sandboxes() {
      if (!pool) return undefined;
      const stats = pool.stats();
      return stats.idle + stats.borrowed;
    },
    async close() {
      await Promise.allSettled(envs.map((env) => env.close()));
      await pool?.close();
      await restorer?.close();
    },
  };
}
