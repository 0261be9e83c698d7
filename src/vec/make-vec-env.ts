import { SandboxEnv } from '../env/sandbox-env.js';
import { unwrapped } from '../env/task-env-wrapper.js';
import type { TaskEnv } from '../env/types.js';
import { ConfigError } from '../errors.js';
import { InPlaceRestorer } from '../pool/reuse/in-place-restore.js';
import type { Workspace, WorkspaceFactory } from '../pool/types.js';
import { WorkspacePool, type WorkspacePoolOptions } from '../pool/workspace-pool.js';
import { VecEnv, type VecEnvOptions } from './vec-env.js';

/**
 * How a used sandbox becomes clean again. `restore`: in place (see InPlaceRestorer; the
 * default, measured faster); `replace`: removed, and a new one created in its stead.
 */
export type CleanMode = 'restore' | 'replace';

/**
 * `restore`, except under an OCI runtime other than runc (`ociRuntime`, from `--runtime`):
 * under gVisor (runsc) the in-place restore does not bring a sandbox back to its image's
 * state (test/integration/pool-restore.test.ts fails under runsc: gVisor's own /dev, /proc
 * and file metadata differ from what the restore rebuilds), so a used sandbox is replaced
 * by a new one (docs/security.md has the measured cost).
 */
export function defaultCleanMode(ociRuntime: string | undefined): CleanMode {
  return restoreSupported(ociRuntime) ? 'restore' : 'replace';
}

/** Whether the in-place restore can clean sandboxes of this OCI runtime (runc, or the engine's default, only). */
function restoreSupported(ociRuntime: string | undefined): boolean {
  return ociRuntime === undefined || ociRuntime === '' || ociRuntime === 'runc';
}

/**
 * The restorer a pool of `factory`'s workspaces cleans them with, or undefined when used
 * ones are replaced: `clean` (default `restore`) asks, and a runtime the restore cannot
 * clean (see {@link defaultCleanMode}) gets replacements whatever was asked.
 */
export function cleaningRestorer(factory: WorkspaceFactory, clean: CleanMode = 'restore', keepWarmMs = 0): InPlaceRestorer | undefined {
  return !factory.freshRoots && restoreSupported(factory.ociRuntime) && clean === 'restore' ? new InPlaceRestorer(factory, keepWarmMs) : undefined;
}

/**
 * Who borrows from a shared pool, which sets how many spare workspaces it keeps ready:
 * - `steps`: a VecEnv stepped back to back (a trainer, `collect`): a spare per env, two at
 *   least — an env's reset then finds a restored workspace while the one it left is being
 *   restored (docs/performance.md, "Figures behind the code": reset latencies by spares, and what an idle
 *   sandbox holds).
 * - `episodes`: the episode scheduler's whole episodes (`eval`, `run`): two, not one per env —
 *   a sandbox costs about ten restores of CPU to create, which a short run never earns back.
 * - `sessions`: the server's sessions, which come and go: {@link SESSION_SPARES} made ahead
 *   (fewer with fewer envs), and a session past them gets one made when it starts — not one
 *   per env ahead (`serve --max-sessions 64` warmed 68 sandboxes on a 2-core machine).
 */
export type PoolWorkload = 'steps' | 'episodes' | 'sessions';

/** Sandboxes a server's pool makes ahead by default (the `sessions` workload). */
export const SESSION_SPARES = 4;

/** The spare workspaces a pool shared by `borrowers` envs keeps for `workload` (see {@link PoolWorkload}). */
export function spareWorkspaces(borrowers: number, workload: PoolWorkload): number {
  switch (workload) {
    case 'steps':
      return Math.max(2, borrowers);
    case 'episodes':
      return 2;
    case 'sessions':
      return Math.min(SESSION_SPARES, borrowers);
  }
}

/**
 * The SandboxEnvs under `envs` (each one {@link unwrapped}), when they can share one pool of
 * workspaces: all SandboxEnvs that share workspaces (bash, python, ctf); else undefined.
 */
export function poolableSandboxEnvs(envs: readonly TaskEnv[]): readonly SandboxEnv[] | undefined {
  const inner = envs.map(unwrapped);
  return inner.length > 0 && inner.every((env): env is SandboxEnv => env instanceof SandboxEnv && env.sharesWorkspaces) ? inner : undefined;
}

export interface SharedPoolOptions {
  /** Default `steps`. */
  workload?: PoolWorkload;
  clean?: CleanMode;
  pool?: Partial<Omit<WorkspacePoolOptions, 'restore'>>;
}

/** A pool `envs` share, with the restorer that cleans its used workspaces (none: they are replaced). */
export interface SharedPool {
  pool: WorkspacePool;
  restorer: InPlaceRestorer | undefined;
  /** The most sandboxes that exist at once: lent, spare, and the restorer's pristine template. */
  sandboxLimit: number;
}

/**
 * The one pooling rule: one warm {@link WorkspacePool} for `envs` (all of one kind and
 * configuration, see {@link poolableSandboxEnvs}), keeping {@link spareWorkspaces} spares ready and
 * never growing past the envs and the spares (a creation costs ten restores of CPU, so a
 * pool that grew while restores lagged only slowed them further); used workspaces are
 * restored in place off the hot path, or replaced (see {@link cleaningRestorer}). Every env
 * is pointed at it. `options.pool` overrides what it names.
 * @throws Error when `envs` is empty.
 */
export function sharedPool(envs: readonly SandboxEnv[], options: SharedPoolOptions = {}): SharedPool {
  const first = envs[0];
  if (!first) throw new Error('a shared pool needs at least one env');
  const factory = first.workspaceFactory();
  const restorer = cleaningRestorer(factory, options.clean, options.pool?.keepWarmMs);
  // Fresh roots cost about what a restore does: one spare per env (a reset hands over a root made while the episode before ran).
  const workload = options.workload ?? 'steps';
  const minIdle = options.pool?.minIdle ?? (factory.freshRoots && workload !== 'sessions' ? Math.max(2, envs.length) : spareWorkspaces(envs.length, workload));
  const settings = {
    borrowers: envs.length,
    minIdle,
    max: envs.length + minIdle,
    // Sessions come and go: most of a server's envs may never be used at once.
    onDemand: options.workload === 'sessions',
    ...options.pool,
    ...(restorer ? { restore: (workspace: Workspace) => restorer.restore(workspace) } : {}),
  };
  const pool = new WorkspacePool(factory, settings);
  for (const env of envs) env.useWorkspaces(pool);
  return { pool, restorer, sandboxLimit: settings.max + (restorer ? 1 : 0) };
}

export interface PooledVecEnvOptions extends VecEnvOptions, SharedPoolOptions {}

/**
 * A VecEnv over `envs` (all of one kind and configuration) that share one warm pool (see
 * {@link sharedPool}): each reset hands over a ready workspace, and used ones are cleaned
 * off the hot path. Closing the VecEnv closes the envs, then the pool.
 */
export function pooledVecEnv(envs: readonly TaskEnv[], options: PooledVecEnvOptions): { vec: VecEnv; pool: WorkspacePool } {
  const sandboxEnvs = poolableSandboxEnvs(envs);
  if (!sandboxEnvs) throw new ConfigError('envs', 'must all be SandboxEnvs that share workspaces (bash, python, ctf), each wrapped or not, to share a pool');
  const { pool, restorer } = sharedPool(sandboxEnvs, options);
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
 * The VecEnv for a CLI command's envs (as an EnvCli created them): envs that can share a
 * pool ({@link poolableSandboxEnvs}) share a warm one whose used sandboxes are restored in place
 * ({@link pooledVecEnv}); other envs are stepped as they are — a SandboxEnv then makes a
 * new sandbox per reset, the SQL env keeps its session on its own server.
 */
export function vecEnvFor(envs: readonly TaskEnv[], options: PooledVecEnvOptions): VecEnv {
  if (poolableSandboxEnvs(envs)) return pooledVecEnv(envs, options).vec;
  return new VecEnv(envs, options);
}
