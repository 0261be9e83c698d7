import { SandboxEnv } from '../env/sandbox-env.js';
import type { TaskEnv } from '../env/types.js';
import { InPlaceRestorer } from '../pool/in-place-restore.js';
import type { WorkspaceFactory } from '../pool/types.js';
import { WorkspacePool, type WorkspacePoolOptions } from '../pool/workspace-pool.js';
import { VecEnv, type VecEnvOptions } from './vec-env.js';

/**
 * How a used sandbox becomes clean again. `restore`: in place (see InPlaceRestorer; the
 * default, measured faster); `replace`: removed, and a new one created in its stead.
 */
export type CleanMode = 'restore' | 'replace';

/**
 * `restore`, except under an OCI runtime other than runc (INTERCODE_RUNTIME, set by
 * `--runtime`): under gVisor (runsc) the in-place restore does not bring a sandbox back to
 * its image's state (test/integration/pool-restore.test.ts fails under runsc: gVisor's own
 * /dev, /proc and file metadata differ from what the restore rebuilds), so a used sandbox is
 * replaced by a new one (docs/security.md has the measured cost).
 */
export function defaultCleanMode(): CleanMode {
  return restoreSupported() ? 'restore' : 'replace';
}

/** Whether the in-place restore can clean sandboxes of the OCI runtime in use (runc only). */
function restoreSupported(): boolean {
  const runtime = process.env.INTERCODE_RUNTIME;
  return runtime === undefined || runtime === '' || runtime === 'runc';
}

/**
 * The restorer a pool of `factory`'s workspaces cleans them with, or undefined when used
 * ones are replaced: `clean` (default `restore`) asks, and a runtime the restore cannot
 * clean (see {@link defaultCleanMode}) gets replacements whatever was asked.
 */
export function cleaningRestorer(factory: WorkspaceFactory, clean: CleanMode = 'restore', keepWarmMs = 0): InPlaceRestorer | undefined {
  return restoreSupported() && clean === 'restore' ? new InPlaceRestorer(factory, keepWarmMs) : undefined;
}

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
  const restorer = cleaningRestorer(factory, options.clean, options.pool?.keepWarmMs);
  // A spare per env: an env's reset then finds a restored workspace while the one it
  // left is being restored (measured with 4 envs under load: reset p50 24 ms with 2
  // spares, 7.6 ms with 4, 7.2 ms with 8). An idle sandbox holds ~2 MiB.
  const minIdle = options.pool?.minIdle ?? Math.max(2, envs.length);
  const pool = new WorkspacePool(factory, {
    borrowers: envs.length,
    minIdle,
    // No growth past what the envs and the spares need: a creation costs ten restores of
    // CPU, so a pool that grew while restores lagged only slowed them further.
    max: envs.length + minIdle,
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
 * The VecEnv for a CLI command's envs (as an EnvCli created them): SandboxEnvs that can
 * share workspaces ({@link SandboxEnv.sharesWorkspaces}: bash, python, ctf) share a warm pool whose used sandboxes are restored in place ({@link pooledVecEnv});
 * other envs are stepped as they are — a SandboxEnv then makes a new sandbox per reset, the
 * SQL env keeps its session on its own server.
 * @throws ConfigError when `envs` is empty.
 */
export function vecEnvFor(envs: readonly TaskEnv[], options: PooledVecEnvOptions): VecEnv {
  const poolReady = envs.filter((env): env is SandboxEnv => env instanceof SandboxEnv && env.sharesWorkspaces);
  if (envs.length > 0 && poolReady.length === envs.length) return pooledVecEnv(poolReady, options).vec;
  return new VecEnv(envs, options);
}
