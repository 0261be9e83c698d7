import type Docker from 'dockerode';
import { createHash } from 'node:crypto';
import { liveSandboxes } from '../lifecycle/registry.js';
import { dockerSystemView } from '../docker/container-creation.js';
import { FifoChannel } from '../docker/fifo-channel.js';
import { newTag } from '../docker/warm-sandboxes.js';
import { DEFAULT_DISK_BYTES, type Sandbox, type SandboxRuntime, type SandboxSettings, type SandboxSpec } from '../types.js';
import { helperBinary } from './helper-binary.js';
import { RootPool } from './root-pool.js';
import { RootSandbox } from './root-sandbox.js';

/** What makes two specs' roots differ (their labels do not). */
function poolKey(spec: SandboxSpec): string {
  const { labels: _labels, ...rest } = spec;
  return createHash('sha256').update(JSON.stringify(rest)).digest('hex');
}

/**
 * Sandboxes as episode roots (see docs/design/episode-roots.md): for each spec one pool
 * container on a local runc engine, whose helper makes every sandbox a new root file system
 * and namespaces in ~5 ms, equal to a new container of the image by construction.
 */
export class EpisodeRootRuntime implements SandboxRuntime {
  readonly name = 'docker';
  readonly ociRuntime: string | undefined;
  private readonly pools = new Map<string, Promise<RootPool>>();
  private readonly diskLimitBytes: number;

  constructor(
    private readonly docker: Docker,
    options: SandboxSettings = {},
  ) {
    this.ociRuntime = options.ociRuntime;
    this.diskLimitBytes = options.diskLimitBytes ?? DEFAULT_DISK_BYTES;
  }

  /** A root shows what a new container shows: the same view, part of a stored gold's key. */
  get systemView(): string {
    return dockerSystemView(this.ociRuntime);
  }

  private pool(spec: SandboxSpec): Promise<RootPool> {
    const key = poolKey(spec);
    let pool = this.pools.get(key);
    if (!pool) {
      const diskBytes = spec.limits.diskBytes ?? this.diskLimitBytes;
      pool = helperBinary().then((helper) => RootPool.start(this.docker, spec, { ociRuntime: this.ociRuntime, diskBytes, helper }));
      pool.catch(() => this.pools.delete(key));
      this.pools.set(key, pool);
      // The pool goes when this process stops using the runtime (see close).
      liveSandboxes.track({ destroy: () => this.closePool(key) });
    }
    return pool;
  }

  private async closePool(key: string): Promise<void> {
    const pool = this.pools.get(key);
    this.pools.delete(key);
    await (await pool?.catch(() => undefined))?.close();
  }

  create(spec: SandboxSpec): Promise<Sandbox> {
    return liveSandboxes.adopt(this.createRoot(spec));
  }

  private async createRoot(spec: SandboxSpec): Promise<RootSandbox> {
    const pool = await this.pool(spec);
    const channel = await FifoChannel.create(newTag());
    try {
      const root = await pool.createRoot(channel.shared);
      const sandbox = new RootSandbox(pool, root, spec, channel);
      await sandbox.holdDisk(spec.limits.diskBytes ?? this.diskLimitBytes);
      return liveSandboxes.track(sandbox);
    } catch (error) {
      await channel.remove();
      throw error;
    }
  }

  /** Removes every pool (and so every root) of this runtime. */
  async close(): Promise<void> {
    await Promise.all([...this.pools.keys()].map((key) => this.closePool(key)));
  }
}
