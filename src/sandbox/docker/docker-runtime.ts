import type Docker from 'dockerode';
import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { liveSandboxes } from '../lifecycle/registry.js';
import { DEFAULT_DISK_BYTES, type DiskEnforcement, type LayerArchive, type Sandbox, type SandboxRuntime, type SandboxSettings, type SandboxSpec, type WarmRole } from '../types.js';
import { createContainer, dockerSystemView, engineHoldsDiskLimit } from './container-creation.js';
import { DockerSandbox } from './docker-sandbox.js';
import { withMountedFiles } from './layer-archive.js';
import { CHANNEL_MOUNT, FifoChannel } from './fifo-channel.js';
import { WarmParking } from './keep-warm/warm-parking.js';
import { channelDir, newTag } from './keep-warm/warm-sandboxes.js';

/**
 * How attached processes (the persistent shells) talk to us. `fifo`: named pipes in a host
 * directory mounted into the sandbox (the engine must run on this host; see FifoProcess).
 * `attach`: a stream relayed by the engine (works with any engine, remote ones included).
 */
export type Transport = 'fifo' | 'attach';

export interface DockerRuntimeOptions extends SandboxSettings {
  /** Default: `fifo` for an engine on a local Unix socket, `attach` otherwise. */
  transport?: Transport;
}

/** Sandboxes as Docker containers: no network, resource limits, no new privileges. */
export class DockerRuntime implements SandboxRuntime {
  readonly name = 'docker';
  private transport: Transport;
  /** Set once the first sandbox proved the engine sees our channel directories. */
  private fifoChecked = false;
  /** The OCI runtime sandboxes run under (undefined: the engine's default). */
  readonly ociRuntime: string | undefined;
  private storage: Promise<string> | undefined;

  constructor(
    private readonly docker: Docker,
    options: DockerRuntimeOptions = {},
  ) {
    const local = process.platform === 'linux' && Boolean((docker.modem as { socketPath?: unknown }).socketPath);
    this.ociRuntime = options.ociRuntime;
    this.diskLimitBytes = options.diskLimitBytes ?? DEFAULT_DISK_BYTES;
    // FIFOs in a bind mount are runc's: gVisor's gofer does not open them (measured: the shell never starts).
    const fifoCapable = local && (this.ociRuntime === undefined || this.ociRuntime === 'runc');
    this.transport = options.transport ?? (process.env.INTERCODE_TRANSPORT === 'attach' || !fifoCapable ? 'attach' : 'fifo');
    this.local = local;
    this.parking = new WarmParking(docker, {
      ociRuntime: this.ociRuntime,
      transport: () => this.transport,
      diskBytes: (spec) => this.diskBytes(spec),
      imageId: async (image) => (await this.image(image)).id,
    });
  }

  /** Parks this runtime's sandboxes and claims parked ones (see {@link park}, {@link adopt}). */
  private readonly parking: WarmParking;

  /** Bytes a sandbox may write when its spec names no limit (the `diskLimitBytes` option, else {@link DEFAULT_DISK_BYTES}). */
  readonly diskLimitBytes: number;

  /** The disk limit of a sandbox for `spec`. */
  private diskBytes(spec: SandboxSpec): number {
    return spec.limits.diskBytes ?? this.diskLimitBytes;
  }

  private readonly local: boolean;

  get systemView(): string {
    return dockerSystemView(this.ociRuntime);
  }

  /**
   * Whether an agent's process can open the /proc/<pid>/fd and environ of the harness's
   * processes whatever its capabilities (Sandbox.harnessDescriptorsExposed): under gVisor,
   * whose runsc 20221219 makes no access check there (measured: confined or not, and for a
   * process that is not dumpable; ptrace and /proc/<pid>/mem are refused to every process).
   */
  private get harnessDescriptorsExposed(): boolean {
    return this.ociRuntime === 'runsc';
  }

  private readonly images = new Map<string, Promise<{ id: string | undefined; bytes: number }>>();

  /**
   * An image's id and size on the engine, inspected once per process (id undefined and size
   * 0 when it cannot be read: creating a container will say why).
   */
  private image(image: string): Promise<{ id: string | undefined; bytes: number }> {
    let inspected = this.images.get(image);
    if (!inspected) {
      inspected = this.docker.getImage(image).inspect().then(
        (info) => ({ id: info.Id, bytes: info.Size ?? 0 }),
        () => ({ id: undefined, bytes: 0 }),
      );
      this.images.set(image, inspected);
    }
    return inspected;
  }

  /**
   * How a sandbox's disk limit is held on an engine with storage driver `driver`: by the
   * engine where it can, else watched where its layer can be read, else a file-size limit.
   */
  private diskEnforcement(driver: string): DiskEnforcement {
    return engineHoldsDiskLimit(driver) ? 'engine' : this.local && driver === 'overlay2' ? 'watched' : 'file-size';
  }

  /** The engine's storage driver (asked once). */
  private storageDriver(): Promise<string> {
    this.storage ??= this.docker.info().then(
      (info: { Driver?: string }) => info.Driver ?? 'unknown',
      () => 'unknown',
    );
    return this.storage;
  }

  /** The transport new sandboxes use (`fifo` may fall back to `attach` after the first sandbox). */
  get activeTransport(): Transport {
    return this.transport;
  }

  create(spec: SandboxSpec): Promise<Sandbox> {
    // Tracked from the start, so a shutdown also waits for (and removes) a sandbox still being made.
    return liveSandboxes.adopt(this.createStarted(spec));
  }

  /** A new sandbox whose writable layer is `layer`'s before it starts (see SandboxRuntime.createFromLayer). */
  createFromLayer(spec: SandboxSpec, layer: LayerArchive): Promise<Sandbox> {
    return liveSandboxes.adopt(withMountedFiles(this.createStarted(spec, layer), spec, layer));
  }

  private async createStarted(spec: SandboxSpec, layer?: LayerArchive): Promise<DockerSandbox> {
    const tag = newTag();
    const channel = this.transport === 'fifo' ? await FifoChannel.create(tag) : undefined;
    try {
      const sandbox = await this.createContainer(spec, channel, tag, layer);
      if (channel && !this.fifoChecked) await this.checkChannel(sandbox, channel).catch(async (error: unknown) => {
        await sandbox.destroy().catch(() => undefined);
        throw error;
      });
      return sandbox;
    } catch (error) {
      await channel?.remove();
      throw error;
    }
  }

  /**
   * An engine in a VM (Docker Desktop) or on another host mounts its own directory of that
   * name, not ours: then fall back to `attach` for good.
   */
  private async checkChannel(sandbox: DockerSandbox, channel: FifoChannel): Promise<void> {
    const token = randomBytes(8).toString('hex');
    const probe = join(channel.shared, '.probe');
    await writeFile(probe, token);
    // Removed once read: the sandboxes made before the check ends would otherwise show it to
    // their agent (`ls -a /run/intercode`), and later ones not.
    const seen = await sandbox.exec(['cat', `${CHANNEL_MOUNT}/.probe`], { timeoutMs: 10_000 }).finally(() => rm(probe, { force: true }));
    if (seen.output.toString() === token) this.fifoChecked = true;
    else {
      this.transport = 'attach';
      sandbox.useAttach();
    }
  }

  private async createContainer(spec: SandboxSpec, channel: FifoChannel | undefined, tag: string, layer?: LayerArchive): Promise<DockerSandbox> {
    const diskBytes = this.diskBytes(spec);
    const driver = await this.storageDriver();
    // The engine's quota covers what the container references, its image included (btrfs qgroups).
    const quotaBytes = engineHoldsDiskLimit(driver) ? diskBytes + (await this.image(spec.image)).bytes : 0;
    const container = await createContainer(this.docker, spec, { tag, channel, ociRuntime: this.ociRuntime, diskBytes, quotaBytes, ...(layer ? { layer } : {}) });
    const sandbox = new DockerSandbox(container, spec, channel, tag, this.harnessDescriptorsExposed);
    await sandbox.holdDisk(this.diskEnforcement(driver), diskBytes);
    return sandbox;
  }

  park(sandbox: Sandbox, role: WarmRole, ttlMs: number): Promise<boolean> {
    if (!(sandbox instanceof DockerSandbox)) return Promise.resolve(false);
    return this.parking.park(sandbox, role, ttlMs);
  }

  async adopt(spec: SandboxSpec, role: WarmRole): Promise<Sandbox | undefined> {
    if (!this.parking.keepsWarm) return undefined;
    return liveSandboxes.adopt(this.adoptParked(spec, role));
  }

  private async adoptParked(spec: SandboxSpec, role: WarmRole): Promise<DockerSandbox | undefined> {
    const found = await this.parking.claim(spec, role);
    if (!found) return undefined;
    // Its channel is this process's already (the claim).
    const channel = await FifoChannel.takeOver(channelDir(found.tag, process.pid));
    const sandbox = new DockerSandbox(this.docker.getContainer(found.id), spec, channel, found.tag, this.harnessDescriptorsExposed);
    try {
      await sandbox.holdDisk(this.diskEnforcement(await this.storageDriver()), this.diskBytes(spec));
    } catch (error) {
      await sandbox.destroy().catch(() => undefined);
      throw error;
    }
    return sandbox;
  }
}
