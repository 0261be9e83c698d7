import genericPool, { type Pool } from 'generic-pool';
import { ConfigError, SandboxError } from '../errors.js';
import type { RestoreOutcome } from './reuse/in-place-restore.js';
import type { Workspace, WorkspaceFactory, WorkspaceSource } from './types.js';

export interface WorkspacePoolOptions {
  /** How many workspaces are in use at once at most (one per env sharing the pool). Default 1. */
  borrowers: number;
  /** Workspaces kept ready beyond those in use (refilled in the background). Default 2. */
  minIdle: number;
  /**
   * Make only `minIdle` workspaces ahead and keep at least that many alive, in use or idle; a
   * borrower past them gets one made when it asks (up to `max`). For borrowers most of which
   * may never come at once (a server's sessions). Default false: one ahead per borrower too.
   */
  onDemand: boolean;
  /** Most workspaces alive at once, in use or idle. Default 64. */
  max: number;
  /** An acquire that waits longer than this fails. Default 120 000 ms. */
  acquireTimeoutMs: number;
  /** After this many creations in a row fail, the pool stops retrying and fails every acquire with the cause. Default 3. */
  maxConsecutiveFailures: number;
  /**
   * Restores a used workspace in place: clean, it goes back to the idle set; refused (or a
   * throw), it is removed. Omitted: used workspaces are removed.
   */
  restore?: (workspace: Workspace) => Promise<RestoreOutcome>;
  /**
   * When > 0 (and the factory can), the pool first adopts sandboxes an earlier process kept
   * warm (each restored before use), and on close keeps its clean idle ones warm for this
   * long instead of removing them. Needs `restore`. Default 0.
   */
  keepWarmMs: number;
}

/** How long after its creation or restore a workspace is handed out without a liveness round trip. */
const JUST_CLEANED_MS = 1_000;

const DEFAULTS: WorkspacePoolOptions = { borrowers: 1, minIdle: 2, onDemand: false, max: 64, acquireTimeoutMs: 120_000, maxConsecutiveFailures: 3, keepWarmMs: 0 };

/** @throws ConfigError naming the bad option. */
function resolve(options: Partial<WorkspacePoolOptions>): WorkspacePoolOptions {
  const resolved = { ...DEFAULTS, ...options };
  const integer = (name: keyof WorkspacePoolOptions, min: number) => {
    const value = resolved[name];
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
      throw new ConfigError(`pool.${name}`, `must be an integer ≥ ${min}, got ${String(value)}`);
    }
  };
  integer('borrowers', 1);
  integer('minIdle', 0);
  integer('max', 1);
  integer('acquireTimeoutMs', 1);
  integer('maxConsecutiveFailures', 1);
  integer('keepWarmMs', 0);
  return resolved;
}

export interface PoolStats {
  /** Ready to hand out. */
  idle: number;
  /** Handed out, or being restored / removed. */
  borrowed: number;
  /** Handed out and not yet given back (`borrowed` less those being restored or removed). */
  lent: number;
  /** Being created. */
  pending: number;
  created: number;
  restored: number;
  removed: number;
  /** Found dead or dirty on borrow and removed instead of handed out. */
  rejectedOnBorrow: number;
  /** Taken over from an earlier process that kept them warm (counted in `created` too). */
  adopted: number;
  /** Kept warm for a later process when the pool closed. */
  parked: number;
}

/**
 * A warm pool of workspaces (generic-pool underneath): sandboxes created, started, runner
 * open, kept ready so a reset is a hand-over. Every workspace handed out is checked first
 * (its runner must be alive and it must never have been handed out since it was last made
 * clean); used ones are restored in place or removed off the hot path, and the pool
 * refills to `minIdle` spare workspaces in the background. A factory that keeps failing
 * (a broken image, a stopped engine) makes the pool fail fast with the cause instead of
 * retrying forever.
 */
export class WorkspacePool implements WorkspaceSource {
  private readonly pool: Pool<Workspace>;
  private readonly options: WorkspacePoolOptions;
  /** Workspaces handed out and not yet cleaned: never valid on borrow. */
  private readonly dirty = new WeakSet<Workspace>();
  private readonly background = new Set<Promise<unknown>>();
  private readonly lent = new Set<Workspace>();
  /** When each workspace was last made or cleaned (performance.now()). */
  private readonly cleanedAt = new WeakMap<Workspace, number>();
  private consecutiveFailures = 0;
  private failure: SandboxError | undefined;
  private rejectFailed: ((error: SandboxError) => void) | undefined;
  private readonly failed: Promise<never>;
  private counters = { created: 0, restored: 0, removed: 0, rejectedOnBorrow: 0, adopted: 0, parked: 0 };
  private closing = false;
  /**
   * Removals under way. generic-pool frees a removed workspace's place at once and refills
   * it while the removal still runs, so a creation waits for them: no more sandboxes exist
   * at any moment than the pool's `max` (a server test counted one over, at 70 of 69).
   */
  private readonly removing = new Set<Promise<void>>();

  constructor(
    factory: WorkspaceFactory,
    options: Partial<WorkspacePoolOptions> = {},
  ) {
    this.options = resolve(options);
    this.failed = new Promise<never>((_, reject) => (this.rejectFailed = reject));
    this.failed.catch(() => undefined);
    this.pool = genericPool.createPool<Workspace>(
      {
        create: async () => {
          if (this.failure) throw this.failure;
          await Promise.all(this.removing);
          try {
            const workspace = (await this.adopt(factory)) ?? (await factory.create());
            this.consecutiveFailures = 0;
            this.counters.created += 1;
            this.cleanedAt.set(workspace, performance.now());
            return workspace;
          } catch (error) {
            this.onCreateFailure(error);
            throw error;
          }
        },
        destroy: async (workspace) => {
          const removal = (async () => {
            if (await this.park(factory, workspace)) return;
            this.counters.removed += 1;
            await factory.destroy(workspace).catch(() => undefined);
          })();
          this.removing.add(removal);
          try {
            await removal;
          } finally {
            this.removing.delete(removal);
          }
        },
        validate: async (workspace) => {
          const ok = !this.dirty.has(workspace) && (this.justCleaned(workspace) || (await this.answers(workspace)));
          if (!ok) this.counters.rejectedOnBorrow += 1;
          return ok;
        },
      },
      {
        // generic-pool's minimum counts borrowed and idle ones alike.
        min: this.madeAhead(),
        max: this.options.max,
        testOnBorrow: true,
        acquireTimeoutMillis: this.options.acquireTimeoutMs,
        autostart: true,
      },
    );
  }

  /** Workspaces made at start and kept alive at least: one per borrower and the spares, or with `onDemand` the spares only. */
  private madeAhead(): number {
    const { max, borrowers, minIdle, onDemand } = this.options;
    return Math.min(max, (onDemand ? 0 : borrowers) + minIdle);
  }

  /** A sandbox an earlier process kept warm, restored (see {@link WorkspacePoolOptions.keepWarmMs}); undefined when none is clean. */
  private async adopt(factory: WorkspaceFactory): Promise<Workspace | undefined> {
    const { restore, keepWarmMs } = this.options;
    if (keepWarmMs <= 0 || !restore || !factory.adopt || this.closing) return undefined;
    for (;;) {
      const workspace = await factory.adopt('workspace').catch(() => undefined);
      if (!workspace) return undefined;
      // Parked clean, but whatever happened to it since is undone before anyone gets it.
      if ((await restore(workspace).catch(() => undefined))?.clean) {
        this.counters.adopted += 1;
        return workspace;
      }
      await factory.destroy(workspace).catch(() => undefined);
    }
  }

  /** On close: keeps a clean idle workspace warm for a later process. @returns whether it was kept. */
  private async park(factory: WorkspaceFactory, workspace: Workspace): Promise<boolean> {
    const { restore, keepWarmMs } = this.options;
    if (!this.closing || keepWarmMs <= 0 || !restore || !factory.park || this.failure || this.dirty.has(workspace)) return false;
    const kept = await factory.park(workspace, 'workspace', keepWarmMs).catch(() => false);
    if (kept) this.counters.parked += 1;
    return kept;
  }

  private onCreateFailure(error: unknown): void {
    this.consecutiveFailures += 1;
    if (this.consecutiveFailures < this.options.maxConsecutiveFailures || this.failure) return;
    const cause = error instanceof Error ? error.message : String(error);
    this.failure = new SandboxError('SANDBOX_UNAVAILABLE', `The pool stopped creating sandboxes after ${this.consecutiveFailures} failures in a row: ${cause}`, {
      details: { failures: this.consecutiveFailures },
      cause: error,
    });
    this.rejectFailed?.(this.failure);
    // generic-pool retries a failed creation for as long as a client waits: fail the waiting
    // clients (its queue is not public API; checked against generic-pool 3.9) so it stops.
    const queue = (this.pool as unknown as { _waitingClientsQueue?: { length: number; dequeue(): { reject(e: Error): void } | undefined } })._waitingClientsQueue;
    while (queue && queue.length > 0) queue.dequeue()?.reject(this.failure);
  }

  /**
   * Made or cleaned within the last {@link JUST_CLEANED_MS} and its control shell has not
   * exited (a sandbox that dies closes its shells' streams, which marks them dead): that
   * proves it alive as well as a round trip would have then, without the round trip. The
   * moment after either check, a sandbox may still die; its episode then ends truncated.
   */
  private justCleaned(workspace: Workspace): boolean {
    const at = this.cleanedAt.get(workspace);
    return at !== undefined && performance.now() - at < JUST_CLEANED_MS && workspace.control.isAlive;
  }

  /**
   * A dead sandbox fails a no-op command of its control shell (a bash, whatever the agent's
   * runner is; a dead shell cannot be respawned in a dead sandbox).
   */
  private async answers(workspace: Workspace): Promise<boolean> {
    try {
      const result = await workspace.control.run(':', { timeoutMs: 5_000 });
      return result.exitCode === 0 && result.events.length === 0;
    } catch {
      return false;
    }
  }

  async acquire(): Promise<Workspace> {
    if (this.failure) throw this.failure;
    const acquiring = this.pool.acquire();
    acquiring.catch(() => undefined);
    const workspace = await Promise.race([acquiring, this.failed]);
    this.dirty.add(workspace);
    this.lent.add(workspace);
    return workspace;
  }

  /**
   * An idle workspace when one is ready; else undefined at once (nothing made, no wait for a
   * release). generic-pool takes an idle one for an acquire as soon as it is asked, so the
   * idle count seen here already leaves out those other calls are taking.
   */
  async acquireIfIdle(): Promise<Workspace | undefined> {
    if (this.failure || this.closing || this.pool.available <= 0) return undefined;
    return this.acquire();
  }

  release(workspace: Workspace): void {
    if (!this.lent.delete(workspace)) return;
    const { restore } = this.options;
    const task = (async () => {
      if (restore && !this.failure) {
        const restored = await restore(workspace).catch(() => undefined);
        if (restored?.clean) {
          this.dirty.delete(workspace);
          this.counters.restored += 1;
          this.cleanedAt.set(workspace, performance.now());
          await this.pool.release(workspace);
          return;
        }
      }
      await this.pool.destroy(workspace);
    })()
      .catch(() => undefined)
      .finally(() => this.background.delete(task));
    this.background.add(task);
  }

  stats(): PoolStats {
    return { idle: this.pool.available, borrowed: this.pool.borrowed, lent: this.lent.size, pending: this.pool.pending, ...this.counters };
  }

  /** Resolves once `count` workspaces are idle (or rejects with the pool's failure). */
  async ready(count = this.madeAhead()): Promise<void> {
    while (this.pool.available < count) {
      if (this.failure) throw this.failure;
      await new Promise((resolveWait) => setTimeout(resolveWait, 20));
    }
  }

  /**
   * Removes every workspace, those still lent out included (their episodes are over); with
   * `keepWarmMs`, clean idle ones are kept warm instead.
   */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(this.background);
    await Promise.all([...this.lent].map((workspace) => this.pool.destroy(workspace).catch(() => undefined)));
    this.lent.clear();
    await this.pool.drain();
    await this.pool.clear();
  }
}
