import { FreshWorkspaces } from '../../src/pool/fresh-workspaces.js';
import type { Workspace, WorkspaceFactory, WorkspaceSource } from '../../src/pool/types.js';
import { WorkspacePool } from '../../src/pool/workspace-pool.js';
import type { SandboxSpec } from '../../src/sandbox/types.js';
import { cleaningRestorer } from '../../src/vec/make-vec-env.js';

/** How sandboxes of task images are had: `pooled` (warm, restored in place) or `fresh` (one per episode, removed after it). */
export type TaskSandboxMode = 'pooled' | 'fresh';

export interface ImageWorkspacesOptions {
  mode: TaskSandboxMode;
  /** Images whose pools are kept at once; the least recently used idle one is closed past it. */
  maxWarmImages: number;
  /** Episodes in flight: a pool lends at most this many at once. */
  borrowers: number;
  /** Pooled: clean sandboxes stay warm this long after close, for the next command to take over. */
  keepWarmMs: number;
  /** A workspace factory for a sandbox spec (the env's: its runner starts in the image's WORKDIR). */
  factoryFor(spec: SandboxSpec): WorkspaceFactory;
}

interface ImageEntry {
  source: WorkspaceSource;
  close: () => Promise<void>;
  lent: number;
  lastUsed: number;
}

/**
 * Workspaces for many images (one per task directory, or shared by tasks whose build
 * contexts are the same): per image, a warm {@link WorkspacePool} whose used sandboxes are
 * restored in place, created when an episode first needs that image. At most
 * `maxWarmImages` pools are kept: a new image closes the least recently used pool that lends
 * nothing (its sandboxes removed, or parked with `keepWarmMs`), so a dataset of hundreds of
 * images holds a bounded number of sandboxes: per pool, one made ahead and up to `borrowers + 1`
 * on demand, and the restore's pristine template.
 */
export class ImageWorkspaces {
  private readonly entries = new Map<string, ImageEntry>();
  private readonly closing = new Set<Promise<void>>();
  private closed = false;
  /** Pools opened and closed so far (a figure for the run's summary). */
  counters = { opened: 0, evicted: 0 };

  constructor(private readonly options: ImageWorkspacesOptions) {}

  /** A clean workspace of `spec`'s image. */
  async acquire(spec: SandboxSpec): Promise<Workspace> {
    if (this.closed) throw new Error('ImageWorkspaces used after close()');
    const entry = this.entry(spec);
    entry.lent += 1;
    entry.lastUsed = performance.now();
    try {
      return await entry.source.acquire();
    } catch (error) {
      entry.lent -= 1;
      throw error;
    }
  }

  /** Hands `workspace` back to its image's pool (restored or removed there). */
  release(workspace: Workspace): void {
    const entry = this.entries.get(workspace.sandbox.spec.image);
    if (!entry) {
      // Its pool was closed meanwhile: remove it.
      void this.options.factoryFor(workspace.sandbox.spec).destroy(workspace).catch(() => undefined);
      return;
    }
    entry.lent -= 1;
    entry.source.release(workspace);
  }

  /** Images with a pool now. */
  get warmImages(): number {
    return this.entries.size;
  }

  /** A {@link WorkspaceSource} of one env: its acquire takes the image `spec()` names at that moment. */
  sourceFor(spec: () => SandboxSpec): WorkspaceSource {
    return { acquire: () => this.acquire(spec()), release: (w) => this.release(w), close: async () => undefined };
  }

  private entry(spec: SandboxSpec): ImageEntry {
    const existing = this.entries.get(spec.image);
    if (existing) return existing;
    this.evict();
    const factory = this.options.factoryFor(spec);
    let entry: ImageEntry;
    if (this.options.mode === 'fresh') {
      const fresh = new FreshWorkspaces(factory);
      entry = { source: fresh, close: () => fresh.close(), lent: 0, lastUsed: 0 };
    } else {
      const restorer = cleaningRestorer(factory, 'restore', this.options.keepWarmMs);
      const pool = new WorkspacePool(factory, {
        // One sandbox made ahead per image, more on demand: a dataset of many images with few
        // episodes each would otherwise start several sandboxes per image only to remove them.
        borrowers: 1,
        minIdle: 0,
        max: this.options.borrowers + 1,
        keepWarmMs: this.options.keepWarmMs,
        ...(restorer ? { restore: (workspace: Workspace) => restorer.restore(workspace) } : {}),
      });
      entry = {
        source: pool,
        close: async () => {
          await pool.close();
          await restorer?.close();
        },
        lent: 0,
        lastUsed: 0,
      };
    }
    this.counters.opened += 1;
    this.entries.set(spec.image, entry);
    return entry;
  }

  /** Closes least recently used pools that lend nothing until there is room for one more. */
  private evict(): void {
    while (this.entries.size >= this.options.maxWarmImages) {
      const idle = [...this.entries].filter(([, e]) => e.lent === 0).sort(([, a], [, b]) => a.lastUsed - b.lastUsed)[0];
      // Every pool lends a sandbox: the bound gives way (at most one pool per episode in flight).
      if (!idle) return;
      this.entries.delete(idle[0]);
      this.counters.evicted += 1;
      const closing = idle[1].close().catch(() => undefined);
      this.closing.add(closing);
      void closing.finally(() => this.closing.delete(closing));
    }
  }

  /** Closes every pool (their sandboxes removed, or parked with `keepWarmMs`). */
  async close(): Promise<void> {
    this.closed = true;
    const entries = [...this.entries.values()];
    this.entries.clear();
    await Promise.all([...entries.map((e) => e.close()), ...this.closing]);
  }
}
