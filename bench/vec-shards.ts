/**
 * The env factories the vec bench's worker threads call (see {@link EnvFactorySpec}): each
 * makes its shard's envs in the worker, with the worker's own engine connections and caches.
 * Each env's module is loaded when asked for: a SQLite run never loads the Docker client.
 */
import type { TaskEnv } from '../src/env/types.js';
import type { EnvFactorySpec } from '../src/vec/shard-protocol.js';

const MODULE = 'bench/vec-shards.js';

/** Bash envs over the built-in tasks, on the local engine. */
export async function benchBashEnvs(_options: unknown, count: number): Promise<TaskEnv[]> {
  const { createBashEnvs } = await import('../envs/bash/index.js');
  return createBashEnvs({}, count);
}

/** SQL envs over the built-in tasks on the embedded SQLite backend (no Docker). */
export async function benchSqliteEnvs(_options: unknown, count: number): Promise<TaskEnv[]> {
  const { createSqlEnvs } = await import('../envs/sql/index.js');
  return createSqlEnvs({ embedded: true }, count);
}

export const BENCH_SHARDS: Record<'bash' | 'sqlite', EnvFactorySpec> = {
  bash: { module: MODULE, name: 'benchBashEnvs', options: null },
  sqlite: { module: MODULE, name: 'benchSqliteEnvs', options: null },
};
