import type { Sandbox } from '../types.js';

/** What {@link SandboxRegistry.drain} did. */
export interface DrainReport {
  /** Sandboxes removed. */
  destroyed: number;
  /** Sandboxes whose removal failed (their engine is gone, say); `intercode cleanup` removes them later. */
  failed: number;
  /** Sandboxes still being removed when the time limit passed. */
  pending: number;
}

/**
 * The sandboxes of this process that exist right now: each runtime adds a sandbox when it
 * has started it and forgets it when it is destroyed, so a shutdown can remove every one.
 */
export class SandboxRegistry {
  private readonly live = new Set<Sandbox>();
  private readonly removals = new Map<Sandbox, Promise<void>>();
  private draining = false;

  /** Adds `sandbox`. While draining, a newcomer (a pool refilling) is removed at once. */
  track<T extends Sandbox>(sandbox: T): T {
    this.live.add(sandbox);
    if (this.draining) void this.remove(sandbox).catch(() => undefined);
    return sandbox;
  }

  /** Forgets `sandbox` (its runtime calls this once it is destroyed, or known to be gone). */
  forget(sandbox: Sandbox): void {
    this.live.delete(sandbox);
  }

  get size(): number {
    return this.live.size;
  }

  /** Whether a drain has begun; from then on every sandbox tracked is removed at once. */
  get isDraining(): boolean {
    return this.draining;
  }

  /**
   * Destroys every tracked sandbox, and any tracked while this runs, giving up after
   * `timeoutMs`. Never throws: failures are counted.
   */
  async drain(timeoutMs: number): Promise<DrainReport> {
    this.draining = true;
    const report: DrainReport = { destroyed: 0, failed: 0, pending: 0 };
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), timeoutMs);
    });
    try {
      // Removal forgets a sandbox whatever its outcome, so each pass shrinks the set;
      // another pass picks up sandboxes tracked meanwhile.
      while (this.live.size > 0) {
        const settled = Promise.all(
          [...this.live].filter((s) => !this.removals.has(s)).map((sandbox) =>
            this.remove(sandbox).then(
              () => void report.destroyed++,
              () => void report.failed++,
            ),
          ),
        );
        const inFlight = Promise.all([...this.removals.values()].map((r) => r.catch(() => undefined)));
        if ((await Promise.race([Promise.all([settled, inFlight]), deadline])) === 'late') break;
      }
    } finally {
      clearTimeout(timer);
    }
    report.pending = this.live.size;
    return report;
  }

  /** One removal per sandbox however often asked; the sandbox is forgotten whatever the outcome. */
  private remove(sandbox: Sandbox): Promise<void> {
    let removal = this.removals.get(sandbox);
    if (!removal) {
      removal = sandbox.destroy().finally(() => {
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
