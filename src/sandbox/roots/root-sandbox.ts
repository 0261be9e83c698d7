import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxError } from '../../errors.js';
import { CappedOutput } from '../capped-output.js';
import { LayerWatch } from '../disk/layer-usage.js';
import { diskGuard } from '../disk/disk-guard.js';
import { removeTree } from '../disk/remove-tree.js';
import { CHANNEL_MOUNT, FifoChannel, FifoProcess, shellLauncher, type Launcher } from '../docker/fifo-channel.js';
import { writtenPaths, type LayerPaths } from '../docker/layer-diff.js';
import { archiveContainerLayer, cgroupV1Freezer, layLayerOver, type Pausable } from '../docker/layer-archive.js';
import { liveSandboxes } from '../lifecycle/registry.js';
import { confined } from '../harness-capability.js';
import { killProcesses } from '../shell/kill-processes.js';
import { shellQuote } from '../shell/shell-script.js';
import type { AttachedProcess, AttachOptions, DiskLimit, ExecOptions, ExecResult, FileSystemChange, HarnessShell, LayerArchive, LayerLimits, Sandbox, SandboxFromHost, SandboxSpec, WrittenLayer } from '../types.js';
import type { RootPool, RootRecord } from './root-pool.js';
import { hostCgroupHierarchies } from './root-plan.js';

/** What the engine mounts into a root, never the image's files (as a container without network). */
const MOUNT_POINTS = ['/proc', '/sys', '/dev', '/sbin/docker-init', '/usr/sbin/docker-init', '/etc/hostname', CHANNEL_MOUNT];
function isMountPoint(extra: readonly string[]): (path: string) => boolean {
  const points = [...MOUNT_POINTS, ...extra];
  return (path) => points.some((m) => path === m || path.startsWith(`${m}/`));
}

/**
 * The freezer of episode root `id` (its cgroup in the host's freezer hierarchy, made by the
 * helper beside the engine's containers'); undefined where there is none this process can write.
 */
export function rootFreezer(id: string): Pausable | undefined {
  freezerHierarchy ??= hostCgroupHierarchies().find((h) => h.name.split(',').includes('freezer')) ?? null;
  return freezerHierarchy && /^[0-9a-f]{64}$/.test(id) ? cgroupV1Freezer(join(freezerHierarchy.hostPath, 'docker', id)) : undefined;
}
/** The host's freezer hierarchy (null: none), read from the mount table once per process. */
let freezerHierarchy: { hostPath: string } | null | undefined;

/** Removes root folders off the episode's path, a bounded number at a time (see RootSandbox.destroy). */
class FolderRemovals {
  private running = 0;
  private readonly queue: string[] = [];
  constructor(private readonly concurrency: number) {}
  add(dir: string): void {
    this.queue.push(dir);
    this.next();
  }
  private next(): void {
    while (this.running < this.concurrency && this.queue.length > 0) {
      const dir = this.queue.shift()!;
      this.running++;
      void removeTree(dir)
        .catch(() => undefined)
        .finally(() => {
          this.running--;
          this.next();
        });
    }
  }
  /** Folders waiting or being removed. */
  get backlog(): number {
    return this.running + this.queue.length;
  }
}
export const rootFolderRemovals = new FolderRemovals(2);

/**
 * A sandbox as one episode root of a {@link RootPool}: a fresh root file system and
 * namespaces made by the pool's helper, equal to a new container of the image by
 * construction (see docs/design/episode-roots.md). Processes start through the helper (or,
 * once a shell of ours runs in it, through that shell); files are read on the host from the
 * root's upper folder.
 */
export class RootSandbox implements Sandbox {
  readonly id: string;
  private destroyed = false;
  private launcherShell: HarnessShell | undefined;
  private launcher: Launcher | undefined;
  private diskLimit: DiskLimit | undefined;
  private unguard: (() => void) | undefined;
  private readonly layers: LayerPaths;
  private readonly skip: (path: string) => boolean;

  constructor(
    private readonly pool: RootPool,
    private readonly root: RootRecord,
    readonly spec: SandboxSpec,
    private readonly channel: FifoChannel,
  ) {
    this.id = root.id;
    // The overlay is mounted in the pool container only: the layer is live while the root is.
    this.layers = { upper: join(root.dir, 'upper'), merged: join(root.dir, 'merged'), live: () => !this.destroyed && pool.alive };
    this.skip = isMountPoint((spec.mounts ?? []).map((m) => m.containerPath));
  }

  get disk(): DiskLimit | undefined {
    return this.diskLimit;
  }

  /** Watches the root's upper folder against `limitBytes` (as a container's writable layer is watched). */
  async holdDisk(limitBytes: number): Promise<void> {
    const watch = new LayerWatch(this.layers.upper, limitBytes);
    await watch.measure();
    this.diskLimit = { limitBytes, enforcement: 'watched', exceeded: () => watch.exceeded(), exceededNow: () => watch.exceededNow() };
    this.unguard = diskGuard.guard(watch, async () => {
      if (!this.destroyed) await killProcesses(this).catch(() => undefined);
    });
  }

  private lost(what: string, error: unknown): SandboxError {
    return new SandboxError('SANDBOX_LOST', `Episode root ${this.id.slice(0, 12)}: ${what} failed`, { details: { sandbox: this.id }, cause: error });
  }

  /** A process's environment as the engine's exec gives it: the container's, HOME when it has none, then the caller's. */
  private env(options: { env?: Readonly<Record<string, string>> }): string[] {
    const env = new Map<string, string>();
    for (const entry of this.pool.baseEnv) env.set(entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1));
    if (!env.has('HOME')) env.set('HOME', '/root');
    for (const [k, v] of Object.entries(options.env ?? {})) env.set(k, v);
    return [...env].map(([k, v]) => `${k}=${v}`);
  }

  /** Starts `argv` through the helper with its pipes opened on our side first (the helper waits for its exec). */
  private async launchDirect(argv: readonly string[], options: AttachOptions & { confined?: boolean }, reportExit: boolean): Promise<{ process: FifoProcess; pid: number }> {
    // A pool that went (killed from outside) took its roots' channels with it.
    const pair = await this.channel.takePipes().catch((error: unknown) => {
      throw this.lost(`starting ${argv[0]}`, error);
    });
    const process = FifoProcess.open(pair.host);
    try {
      const flags = `${options.confined ? 'c' : ''}${reportExit ? 'x' : ''}`;
      const pid = await this.pool.launch(this.id, argv, { cwd: options.workdir ?? '/', env: this.env(options), flags }, pair.sandbox);
      // It has opened its ends (the helper answers after its exec): the names go before it can list them.
      for (const path of Object.values(pair.host)) rmSync(path, { force: true });
      return { process, pid };
    } catch (error) {
      process.close();
      throw this.lost(`starting ${argv[0]}`, error);
    }
  }

  async exec(argv: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    const started = performance.now();
    const { process, pid } = await this.launchDirect(argv, options, true);
    const output = new CappedOutput(options.maxOutputBytes);
    const ended = new Promise<void>((resolve) => {
      process.listen({
        output: (chunk) => {
          if (!output.push(chunk)) process.close();
        },
        control: () => undefined,
        exit: resolve,
      });
    });
    const exit = this.pool.exitOf(pid);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timeout'>((resolve) => {
      if (options.timeoutMs !== undefined) timer = setTimeout(() => resolve('timeout'), options.timeoutMs);
    });
    let outcome: number | 'timeout';
    try {
      outcome = await Promise.race([Promise.all([exit, ended]).then(([code]) => code), deadline]);
    } catch (error) {
      throw this.lost(`running ${argv[0]}`, error);
    } finally {
      clearTimeout(timer);
      process.close();
    }
    const timedOut = outcome === 'timeout';
    const exitCode = outcome === 'timeout' || output.over ? null : outcome;
    return { exitCode, output: output.bytes(), timedOut, ...(output.over ? { outputLimited: true, outputBytes: output.seen } : {}), durationMs: performance.now() - started };
  }

  async attach(argv: readonly string[], options: AttachOptions = {}): Promise<AttachedProcess> {
    if (this.launcher && this.launcherShell?.isAlive) {
      try {
        return await FifoProcess.start(this.launcher, this.channel, options.confined ? confined(argv) : argv, options);
      } catch (error) {
        throw this.lost(`starting ${argv[0]}`, error);
      }
    }
    return (await this.launchDirect(argv, options, false)).process;
  }

  launchThrough(shell: HarnessShell): void {
    this.launcherShell = shell;
    this.launcher = shellLauncher(shell);
  }

  /** Read on this host from the root's own folders; process ids set through its pool's helper. */
  readonly fromHost: SandboxFromHost = {
    changes: () => this.changesSeenFromOutside(),
    fileOf: async (path) => (path === '/etc/hostname' ? join(this.root.dir, 'hostname') : undefined),
    setNextPid: async (pid) => {
      try {
        await this.pool.setNextPid(this.id, pid);
        return true;
      } catch {
        return false;
      }
    },
  };

  readonly writtenLayer: WrittenLayer = {
    archive: (archivePath, limits, freeze) => this.archiveLayer(archivePath, limits, freeze),
    apply: (layer) => this.applyLayer(layer),
  };

  /**
   * Not kept in place: a root whose processes must all be killed is lost (its episode ends
   * truncated and the pool hands a new root to the next one, at a new root's cost).
   */
  async restartProcesses(): Promise<void> {
    throw this.lost('restarting its processes', new Error('an episode root is replaced, not restarted'));
  }

  async putArchive(tar: Buffer, destDir: string): Promise<void> {
    const name = `.put-${randomBytes(6).toString('hex')}.tar`;
    const hostPath = join(this.channel.shared, name);
    writeFileSync(hostPath, tar, { mode: 0o600 });
    try {
      const command = `tar -x --same-owner --numeric-owner -p -f ${CHANNEL_MOUNT}/${name} -C ${shellQuote(destDir)} 2>&1`;
      const shell = this.launcherShell;
      const result = shell?.isAlive ? await shell.run(command) : await this.exec(['/bin/sh', '-c', command]).then((r) => ({ exitCode: r.exitCode, output: r.output.toString() }));
      if (result.exitCode !== 0) throw new Error(`tar -x: ${String(result.output).slice(0, 500)}`);
    } catch (error) {
      throw this.lost(`copying files into ${destDir}`, error);
    } finally {
      rmSync(hostPath, { force: true });
    }
  }

  async getArchive(path: string): Promise<Buffer> {
    const slash = path.replace(/\/+$/, '').lastIndexOf('/');
    const parent = slash <= 0 ? '/' : path.slice(0, slash);
    const base = path.replace(/\/+$/, '').slice(slash + 1) || '.';
    const result = await this.exec(['tar', '-c', '-C', parent, '--', base]);
    if (result.exitCode !== 0) throw this.lost(`copying ${path} out`, new Error(result.output.toString().slice(0, 500)));
    return result.output;
  }

  /**
   * The root's upper folder archived on this host (see WrittenLayer.archive), the root frozen
   * meanwhile through its own freezer cgroup unless `freeze` is false, with its /etc/hostname.
   */
  private async archiveLayer(archivePath: string, limits: LayerLimits, freeze = true): Promise<LayerArchive> {
    if (this.destroyed || !this.pool.alive) throw this.lost('archiving its written files', new Error('the root is gone'));
    const frozen = freeze ? rootFreezer(this.id) : undefined;
    if (freeze && !frozen) throw new SandboxError('STATE_UNREADABLE', `Episode root ${this.id.slice(0, 12)}: its freezer cgroup cannot be written from this process`, { details: { sandbox: this.id } });
    return archiveContainerLayer(frozen, this.layers.upper, new Map([['/etc/hostname', join(this.root.dir, 'hostname')]]), archivePath, limits);
  }

  /**
   * Lays `layer` over this root, as new, through our shell in it (see layLayerOver): what an
   * episode's writes made of its upper folder, made again by the same writes through the
   * root's overlay.
   */
  private async applyLayer(layer: LayerArchive): Promise<boolean> {
    const shell = this.launcherShell;
    if (!shell?.isAlive || this.destroyed) return false;
    return layLayerOver({ id: this.id, image: this.spec.image, shell, shared: this.channel.shared, isMountPoint: this.skip, hostFileOf: (path) => this.fromHost.fileOf(path) }, layer);
  }

  async changes(): Promise<FileSystemChange[]> {
    return this.changesSeenFromOutside();
  }

  /**
   * Read on the host from the root's upper folder: every path written since the root was made
   * (a path written back as it was is listed too). A reference is not compared against: a
   * root's merged view exists only in its pool container, where the host cannot read it, and
   * a root is new for its episode, so what it wrote is what its episode changed.
   */
  private async changesSeenFromOutside(): Promise<FileSystemChange[]> {
    try {
      return await writtenPaths(this.layers, this.skip);
    } catch (error) {
      throw this.lost('listing its written files', error);
    }
  }

  /**
   * Kills the root's processes at once; its folder and its channel's are removed off the
   * episode's path: by the pool's helper (see RootPool.kill), or, where the pool is gone or
   * refused, here in the background (see rootFolderRemovals).
   */
  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    this.unguard?.();
    let removed = false;
    try {
      if (this.pool.alive) {
        await this.pool.kill(this.id, [this.root.dir, this.channel.dir]);
        removed = true;
      }
    } finally {
      liveSandboxes.forget(this);
      if (!removed) {
        await this.channel.remove();
        rootFolderRemovals.add(this.root.dir);
      }
    }
  }
}
