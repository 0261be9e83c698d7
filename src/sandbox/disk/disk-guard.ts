/** How often every guarded layer is looked at (one statfs each; a layer walk only when the disk moved). */
const GUARD_MS = 50;

/** How much an over-limit layer must have grown since the last stop to count as still being written. */
const STILL_WRITING_BYTES = 16 * 1024 * 1024;

/** What the guard reads of a layer: its size when over the limit, else undefined (never waits). */
export interface GuardedLayer {
  exceeded(): number | undefined;
}

interface Guarded {
  layer: GuardedLayer;
  stop: () => Promise<void>;
  /** The layer's size when its writers were last stopped (undefined: under the limit since). */
  stoppedAt: number | undefined;
  stopping: boolean;
}

/**
 * Stops writers that outlive the command that started them. A command's own writes are
 * watched while it runs (ShellSession); a process it left running (`… &`) is not, and could
 * fill the disk before the next step looks. Every {@link GUARD_MS} the guard looks at each
 * guarded layer: over its limit, and grown by {@link STILL_WRITING_BYTES} since the last
 * stop (or never stopped), it calls `stop` (the sandbox kills its processes). The episode
 * itself is ended by the env at its next step (see SandboxEnv). One timer for all, unref'd.
 */
export class DiskGuard {
  private readonly guarded = new Set<Guarded>();
  private timer: NodeJS.Timeout | undefined;

  /** Guards `layer`; @returns the function that stops guarding it. */
  guard(layer: GuardedLayer, stop: () => Promise<void>): () => void {
    const entry: Guarded = { layer, stop, stoppedAt: undefined, stopping: false };
    this.guarded.add(entry);
    this.timer ??= setInterval(() => this.look(), GUARD_MS).unref();
    return () => {
      this.guarded.delete(entry);
      if (this.guarded.size === 0 && this.timer) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    };
  }

  private look(): void {
    for (const entry of this.guarded) {
      if (entry.stopping) continue;
      const used = entry.layer.exceeded();
      if (used === undefined) {
        entry.stoppedAt = undefined;
        continue;
      }
      if (entry.stoppedAt !== undefined && used < entry.stoppedAt + STILL_WRITING_BYTES) continue;
      entry.stoppedAt = used;
      entry.stopping = true;
      void entry.stop().finally(() => (entry.stopping = false));
    }
  }
}

/** The guard every watched Docker sandbox of this process is under. */
export const diskGuard = new DiskGuard();
