import type Docker from 'dockerode';
import { createHash } from 'node:crypto';
import { SandboxError } from '../../errors.js';
import { liveSandboxes } from '../lifecycle/registry.js';
import { dockerSystemView } from '../docker/container-creation.js';
import { FifoChannel } from '../docker/fifo-channel.js';
import { extractLayer, withMountedFiles } from '../docker/layer-archive.js';
import { newTag } from '../docker/keep-warm/warm-sandboxes.js';
import { DEFAULT_DISK_BYTES, type LayerArchive, type Sandbox, type SandboxRuntime, type SandboxSettings, type SandboxSpec } from '../types.js';
import { helperBinary } from './helper-binary.js';
import { RootPool, type PoolVariation } from './root-pool.js';
import { RootSandbox } from './root-sandbox.js';

/** What makes two specs' roots differ (their labels do not). */
function poolKey(spec: SandboxSpec): string {
  const { labels: _labels, ...rest } = spec;
  return createHash('sha256').update(JSON.stringify(rest)).digest('hex');
}

/**
 * Sandboxes as episode roots (see docs/design/episode-roots.md): for each spec one pool
 * container on a local runc engine, whose helper makes every sandbox a new root file system
 * and namespaces in milliseconds (docs/design/episode-roots.md has the figures), equal to a
 * new container of the image by construction.
 */
export class EpisodeRootRuntime implements SandboxRuntime {
  readonly name = 'docker';
  readonly ociRuntime: string | undefined;
  readonly freshRoots = true;
  private readonly pools = new Map<string, Promise<RootPool>>();
  private readonly diskLimitBytes: number;

  constructor(
    private readonly docker: Docker,
    options: SandboxSettings = {},
    /** Pools knowingly not a new container's (see RootPoolOptions.variation): tests only. */
    private readonly variation?: PoolVariation,
  ) {
    this.ociRuntime = options.ociRuntime;
    this.diskLimitBytes = options.diskLimitBytes ?? DEFAULT_DISK_BYTES;
  }

  /** A root shows what a new container shows: the same view, part of a stored gold's key. */
  get systemView(): string {
    return dockerSystemView(this.ociRuntime);
  }

  private async pool(spec: SandboxSpec): Promise<RootPool> {
    const key = poolKey(spec);
    let pool = this.pools.get(key);
    // A pool whose container went (killed from outside, its helper dead) makes no more roots:
    // its roots are lost (their episodes end so), and a new pool serves the next ones.
    if (pool && !(await pool.catch(() => undefined))?.alive) {
      await this.closePool(key);
      pool = undefined;
    }
    if (!pool) {
      const diskBytes = spec.limits.diskBytes ?? this.diskLimitBytes;
      pool = helperBinary().then((helper) => RootPool.start(this.docker, spec, { ociRuntime: this.ociRuntime, diskBytes, helper, ...(this.variation ? { variation: this.variation } : {}) }));
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

  /**
   * A new root whose upper folder is `layer` extracted before its overlay is mounted (see
   * SandboxRuntime.createFromLayer): what a new container made from the layer shows, by the
   * same extraction (extractLayer), with the checkpoint's /etc/hostname.
   */
  createFromLayer(spec: SandboxSpec, layer: LayerArchive): Promise<Sandbox> {
    return liveSandboxes.adopt(withMountedFiles(this.createRoot(spec, layer), spec, layer));
  }

  private async createRoot(spec: SandboxSpec, layer?: LayerArchive): Promise<RootSandbox> {
    const pool = await this.pool(spec);
    const channel = await FifoChannel.create(newTag(), pool.makeFifos, pool.channels);
    try {
      const root = await pool.createRoot(channel.shared, layer ? (upper) => extractLayer(layer, upper) : undefined).catch((error: unknown) => {
        throw new SandboxError('SANDBOX_UNAVAILABLE', `Could not create an episode root of ${spec.image}: ${(error as Error).message}`, { cause: error });
      });
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

/**
 * Why episode roots cannot serve sandboxes of `settings` on `docker`, or undefined when they
 * can: a local engine on this host's Unix socket, run as root, with overlay2 and runc, and
 * the helper built (gcc and libseccomp-dev, see `intercode setup`).
 */
export async function episodeRootsUnsupported(docker: Docker, settings: SandboxSettings): Promise<string | undefined> {
  if (process.platform !== 'linux') return 'episode roots need Linux';
  if (process.getuid?.() !== 0) return 'episode roots need this process to run as root (it reads the engine\'s layers and cgroups)';
  if (!(docker.modem as { socketPath?: unknown }).socketPath) return 'episode roots need a local engine on a Unix socket';
  const info = (await docker.info().catch(() => undefined)) as { Driver?: string; DefaultRuntime?: string; CgroupVersion?: string } | undefined;
  if (!info) return 'the engine did not answer';
  const runtime = settings.ociRuntime ?? info.DefaultRuntime ?? 'runc';
  if (runtime !== 'runc') return `episode roots run under runc only (this run's sandboxes use ${runtime})`;
  if (info.Driver !== 'overlay2') return `episode roots need the overlay2 storage driver (the engine has ${info.Driver})`;
  if (info.CgroupVersion === '2') return 'episode roots need cgroup v1 for now (this host has v2)';
  try {
    await helperBinary();
  } catch (error) {
    return (error as Error).message;
  }
  return undefined;
}
