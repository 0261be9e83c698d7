import { ForkingTaskEnvWrapper } from '../env/task-env-wrapper.js';
import type { ResetOptions, ResetResult, TaskEnv } from '../env/types.js';
import { oneOf } from '../errors.js';
import type { PoolStats, WorkspacePool } from '../pool/workspace-pool.js';
import { poolableSandboxEnvs, pooledVecEnv, type PooledVecEnvOptions } from '../vec/make-vec-env.js';
import { VecEnv } from '../vec/vec-env.js';
import { VecEpisodeDriver } from '../vec/episode-driver.js';

/**
 * Where an episode's sandbox comes from. `pooled` (the default): a warm pool shared by the
 * command's envs, used sandboxes restored in place off the hot path. `fresh`: a new sandbox
 * per episode, removed after it (slower: see docs/episode-scheduler.md for the measured cost).
 */
export const SANDBOX_MODES = ['pooled', 'fresh'] as const;
export type SandboxMode = (typeof SANDBOX_MODES)[number];

/** Checks a `--sandboxes` value. @throws ConfigError naming the flag and the known modes. */
export function parseSandboxMode(value: string, option = '--sandboxes'): SandboxMode {
  return oneOf(option, value, SANDBOX_MODES);
}

export interface EpisodeSchedulerOptions {
  /** Default `pooled`. */
  sandboxes?: SandboxMode;
  /** Pool sizing and cleaning (pooled mode only); see {@link pooledVecEnv}. */
  pool?: Omit<PooledVecEnvOptions, 'autoreset'>;
  /**
   * Pooled mode: adopt sandboxes an earlier command kept warm, and keep this one's clean
   * sandboxes warm this long after it closes (see WorkspacePoolOptions.keepWarmMs). Default 0.
   */
  keepWarmMs?: number;
}

/**
 * How the scheduler ended up running a command's episodes: `pooled` when its envs share a warm
 * pool; otherwise why not (`fresh` asked for, or envs that cannot share workspaces: SQL keeps
 * its sessions on its own servers, bash's
 * `--reset intercode` keeps its own sandboxes).
 */
export type SchedulerMode = 'pooled' | 'fresh' | 'own';

/**
 * The one way commands (run, eval, collect, train, replay; servers too) drive episodes:
 * the command's envs behind one {@link VecEnv} without autoreset, and a
 * {@link VecEpisodeDriver} that plays one episode per free env id. When every env is a
 * SandboxEnv that can share workspaces and `pooled` is asked for, the envs share one
 * warm {@link WorkspacePool} that fills in the background (the first episode starts as
 * soon as the first sandbox is ready) and restores used sandboxes in place.
 *
 * The envs are bound to the pool too: code that steps them directly (replay, which scores
 * between actions) gets pooled sandboxes as well. Close the scheduler, not the envs.
 */
export class EpisodeScheduler {
  readonly vec: VecEnv;
  readonly driver: VecEpisodeDriver;
  readonly mode: SchedulerMode;
  /** The shared pool, in `pooled` mode. */
  readonly pool: WorkspacePool | undefined;

  /** @throws ConfigError when `envs` is empty. */
  constructor(
    readonly envs: readonly TaskEnv[],
    options: EpisodeSchedulerOptions = {},
  ) {
    const poolable = poolableSandboxEnvs(envs) !== undefined;
    const wanted = options.sandboxes ?? 'pooled';
    if (wanted === 'pooled' && poolable) {
      const pool = { ...options.pool, workload: 'episodes' as const, pool: { keepWarmMs: options.keepWarmMs ?? 0, ...options.pool?.pool } };
      const { vec, pool: made } = pooledVecEnv(envs, { ...pool, autoreset: 'disabled' });
      this.vec = vec;
      this.pool = made;
      this.mode = 'pooled';
    } else {
      this.vec = new VecEnv(envs, { autoreset: 'disabled' });
      this.pool = undefined;
      this.mode = poolable ? 'fresh' : 'own';
    }
    this.driver = new VecEpisodeDriver(this.vec);
    this.keepWarmMs = this.mode === 'pooled' ? (options.keepWarmMs ?? 0) : 0;
  }

  /** How long the pool's sandboxes stay warm after close (0: removed). */
  readonly keepWarmMs: number;

  /** The pool's counters (pooled mode), e.g. for a summary. */
  stats(): PoolStats | undefined {
    return this.pool?.stats();
  }

  /** When the first episode's reset returned (performance.now()), once one has: where set-up ends. */
  get firstEpisodeAt(): number | undefined {
    return this.firstReset;
  }

  private firstReset: number | undefined;

  /** Plays `play` once per job on the scheduler's envs (see {@link VecEpisodeDriver.forEach}). */
  forEach<T>(jobs: readonly T[], play: (env: TaskEnv, job: T) => Promise<void>, signal?: AbortSignal): Promise<void> {
    const started = () => void (this.firstReset ??= performance.now());
    return this.driver.forEach(jobs, (env, job) => play(new ResetWatch(env, started), job), signal);
  }

  /** Closes the envs, then the pool (every sandbox removed). */
  close(): Promise<void> {
    return this.vec.close();
  }
}

/** A slot env that calls `onReset` after each reset returns (the scheduler's first-episode clock). */
class ResetWatch extends ForkingTaskEnvWrapper {
  constructor(
    env: TaskEnv,
    private readonly onReset: () => void,
  ) {
    super(env);
  }

  override async reset(options?: ResetOptions): Promise<ResetResult> {
    const result = await this.env.reset(options);
    this.onReset();
    return result;
  }
}

/** One sentence for stderr saying how the scheduler runs episodes. */
export function describeScheduler(scheduler: EpisodeScheduler): string {
  const n = scheduler.envs.length;
  switch (scheduler.mode) {
    case 'pooled': {
      const kept = scheduler.keepWarmMs > 0 ? `, kept warm ${scheduler.keepWarmMs / 1000} s after exit for the next command (--keep-warm 0: removed at exit)` : '';
      return `episode scheduler: ${n} env(s) on a warm pool, each used sandbox made new off the episode's path (restored in place, or replaced: episode roots, gVisor)${kept} (--sandboxes fresh for a new sandbox per episode)`;
    }
    case 'fresh':
      return `episode scheduler: ${n} env(s), a new sandbox per episode`;
    case 'own':
      return `episode scheduler: ${n} env(s), each keeping its own sandboxes or sessions (this env or mode does not share a pool)`;
  }
}
