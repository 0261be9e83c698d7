import type { Sandbox } from '../types.js';

/** What the registry removes: a sandbox, or whatever holds sandboxes of its own (a worker thread's shard of envs). */
export type Removable = Pick<Sandbox, 'destroy'>;

/** What {@link SandboxRegistry.drain} did. */
export interface DrainReport {
  /** Sandboxes removed. */
  destroyed: number;
  /** Sandboxes whose removal failed (their engine is gone, say); `intercode cleanup` removes them later. */
  failed: number;
  /** Sandboxes (or creations) still under way when the time limit passed. */
  pending: number;
}

/** What exiting now would leave behind, as {@link SandboxRegistry.onExitNow} counts it. */
export interface ExitNowCounts {
  /** Sandboxes that stay for sure: tracked ones no removal was asked for, and those whose removal failed. */
  left: number;
  /** Creations under way: each may still leave a sandbox (one whose request reached the engine), or none. */
  creating: number;
  /** Removals already asked of the engine: it finishes them without this process. */
  removing: number;
}

/**
 * The sandboxes of this process that exist right now, and those being created: each
 * runtime hands its creations to {@link adopt} and forgets a sandbox once it is destroyed,
 * so a shutdown can remove every one — including one whose creation was under way.
 */
export class SandboxRegistry {
  private readonly live = new Set<Removable>();
  private readonly creations = new Set<Promise<unknown>>();
  private readonly removals = new Map<Removable, Promise<void>>();
  private draining: DrainReport | undefined;

  /**
   * Adds `sandbox`. While draining, a newcomer (an episode or a pool that has not
   * stopped yet) is removed at once.
   */
  track<T extends Removable>(sandbox: T): T {
    this.live.add(sandbox);
    if (this.draining) void this.remove(sandbox).catch(() => undefined);
    return sandbox;
  }

  /**
   * Tracks the sandbox `creation` resolves to (if any); until it settles, a drain waits for it.
   * @returns `creation`'s outcome.
   */
  adopt<T extends Removable | undefined>(creation: Promise<T>): Promise<T> {
    // track() runs before the creation leaves the set, so a drain never sees neither.
    const adopted = creation.then((sandbox) => (sandbox === undefined ? sandbox : this.track(sandbox)));
    const settled: Promise<unknown> = adopted.then(
      () => this.creations.delete(settled),
      () => this.creations.delete(settled),
    );
    this.creations.add(settled);
    return adopted;
  }

  /** Forgets `sandbox` (its runtime calls this once it is destroyed, or known to be gone). */
  forget(sandbox: Removable): void {
    this.live.delete(sandbox);
  }

  /** Sandboxes tracked now (creations under way not counted). */
  get size(): number {
    return this.live.size;
  }

  /** Creations under way. */
  get creating(): number {
    return this.creations.size;
  }

  /**
   * What exiting at once (a second Ctrl-C during a drain) leaves behind. A removal already
   * sent is finished by the engine, so its sandbox is not left; a removal that failed left
   * its sandbox; a creation under way leaves one or not, depending on whether its request
   * reached the engine.
   */
  onExitNow(): ExitNowCounts {
    const removing = [...this.live].filter((sandbox) => this.removals.has(sandbox)).length;
    return { left: this.live.size - removing + (this.draining?.failed ?? 0), creating: this.creations.size, removing };
  }

  /** Whether a drain has begun; from then on every sandbox tracked is removed at once. */
  get isDraining(): boolean {
    return this.draining !== undefined;
  }

  /**
   * Destroys every tracked sandbox, and every one tracked while this runs (creations under
   * way are waited for), giving up after `timeoutMs`. Never throws: failures are counted.
   */
  async drain(timeoutMs: number): Promise<DrainReport> {
    const report: DrainReport = { destroyed: 0, failed: 0, pending: 0 };
    this.draining = report;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), timeoutMs);
    });
    try {
      // A removal forgets its sandbox whatever its outcome, and a creation leaves its set
      // when it settles, so each pass shrinks both; the next picks up newcomers.
      while (this.live.size > 0 || this.creations.size > 0) {
        for (const sandbox of this.live) void this.remove(sandbox).catch(() => undefined);
        const pass = Promise.all([...this.removals.values(), ...this.creations].map((p) => p.catch(() => undefined)));
        if ((await Promise.race([pass, deadline])) === 'late') break;
      }
    } finally {
      clearTimeout(timer);
    }
    report.pending = this.live.size + this.creations.size;
    return report;
  }

  /** One removal per sandbox however often asked; the sandbox is forgotten whatever the outcome. */
  private remove(sandbox: Removable): Promise<void> {
    let removal = this.removals.get(sandbox);
    if (!removal) {
      const report = this.draining;
      removal = sandbox.destroy().then(
        () => {
          if (report) report.destroyed += 1;
        },
        (error: unknown) => {
          if (report) report.failed += 1;
          throw error;
        },
      ).finally(() => {
        this.forget(sandbox);
        this.removals.delete(sandbox);
      });
      this.removals.set(sandbox, removal);
    }
    return removal;
  }
}

/** Every sandbox this process's runtimes have started and not yet destroyed. */
export const liveSandboxes = new SandboxRegistry();
