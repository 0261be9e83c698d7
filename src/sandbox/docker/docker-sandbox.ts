import type Docker from 'dockerode';
import { randomBytes } from 'node:crypto';
import { constants, rmSync, writeFileSync } from 'node:fs';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { SandboxError } from '../../errors.js';
import { CappedOutput } from '../capped-output.js';
import { LayerWatch } from '../disk/layer-usage.js';
import { diskGuard } from '../disk/disk-guard.js';
import { confined } from '../harness-capability.js';
import { liveSandboxes } from '../lifecycle/registry.js';
import { killProcesses } from '../shell/kill-processes.js';
import { shellQuote } from '../shell/shell-script.js';
import type {
  AttachedProcess,
  AttachOptions,
  DiskEnforcement,
  DiskLimit,
  ExecOptions,
  ExecResult,
  FileSystemChange,
  HarnessShell,
  LayerArchive,
  LayerLimits,
  Sandbox,
  SandboxFromHost,
  SandboxSpec,
  ShellHandOver,
  WrittenLayer,
} from '../types.js';
import { MultiplexedStreamParser } from './demux.js';
import { statusCode } from './engine.js';
import { CHANNEL_MOUNT, execLauncher, FifoChannel, FifoProcess, shellLauncher, type Launcher } from './fifo-channel.js';
import { diffAgainstReference, readableLayers, writtenPaths, type LayerPaths } from './layer-diff.js';
import { archiveContainerLayer, cgroupFreezer, layLayerOver } from './layer-archive.js';
import { hostInitPid, setNextPidFromHost } from './reuse/next-pid.js';

function toEnvList(env: Readonly<Record<string, string>> | undefined): string[] | undefined {
  return env ? Object.entries(env).map(([k, v]) => `${k}=${v}`) : undefined;
}

/**
 * The paths the engine mounts into a container, never the image's files: the kernel's file
 * systems, docker-init, the /etc files it manages (which ones depends on the network
 * settings: a container without network gets only /etc/hostname) and the binds (the
 * channel directory among them). Without the container's description: every one it may mount.
 */
function mountPoints(info: Docker.ContainerInspectInfo | undefined): string[] {
  if (!info) return ['/proc', '/sys', '/dev', '/usr/sbin/docker-init', '/etc/hosts', '/etc/hostname', '/etc/resolv.conf', CHANNEL_MOUNT];
  return [
    '/proc',
    '/sys',
    '/dev',
    ...(info.HostConfig.Init ? ['/usr/sbin/docker-init'] : []),
    ...(info.HostnamePath ? ['/etc/hostname'] : []),
    ...(info.HostsPath ? ['/etc/hosts'] : []),
    ...(info.ResolvConfPath ? ['/etc/resolv.conf'] : []),
    ...info.Mounts.map((mount) => mount.Destination),
  ];
}

const underAny = (mounts: readonly string[]) => (path: string) => mounts.some((m) => path === m || path.startsWith(`${m}/`));

/** What the engine says of a container that does not change while it lives. */
interface Inspection {
  /** Its overlay layers, when this process can read them (a local engine, run as root). */
  layers: LayerPaths | undefined;
  isMountPoint: (path: string) => boolean;
  /** The /etc files the engine mounts, by path in the sandbox: their host files this process can read and write. */
  etcFiles: ReadonlyMap<string, string>;
  /** Its first process's host id, when this process can set the sandbox's next process id (see hostInitPid). */
  initPid: number | undefined;
}

/** The /etc files the engine bind-mounts from files of its own, those this process can read and write. */
async function writableEtcFiles(info: Docker.ContainerInspectInfo): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const [path, host] of [['/etc/hostname', info.HostnamePath], ['/etc/hosts', info.HostsPath], ['/etc/resolv.conf', info.ResolvConfPath]] as const) {
    if (!host) continue;
    try {
      await access(host, constants.R_OK | constants.W_OK);
      files.set(path, host);
    } catch {
      // A remote engine's, or this process is not root: the sandbox's own shell handles it.
    }
  }
  return files;
}

/** A sandbox as one Docker container (made by DockerRuntime, see container-creation.ts). */
export class DockerSandbox implements Sandbox {
  readonly id: string;
  private destroyed = false;
  private inspection: Promise<Inspection> | undefined;
  private launcher: Launcher | undefined;
  private launcherShell: HarnessShell | undefined;
  private diskLimit: DiskLimit | undefined;
  /** Stops the disk guard's watch of this sandbox (set with a watched limit). */
  private unguard: (() => void) | undefined;

  get disk(): DiskLimit | undefined {
    return this.diskLimit;
  }

  /**
   * Sets how the disk limit is held. `watched` needs the writable layer readable on this
   * host; without it the limit is the file-size rlimit alone.
   */
  async holdDisk(wanted: DiskEnforcement, limitBytes: number): Promise<void> {
    if (wanted !== 'watched') {
      this.diskLimit = { limitBytes, enforcement: wanted };
      return;
    }
    const { layers } = await this.inspect();
    if (!layers) {
      this.diskLimit = { limitBytes, enforcement: 'file-size' };
      return;
    }
    const watch = new LayerWatch(layers.upper, limitBytes);
    await watch.measure();
    this.diskLimit = { limitBytes, enforcement: 'watched', exceeded: () => watch.exceeded(), exceededNow: () => watch.exceededNow() };
    this.unguard = diskGuard.guard(watch, () => this.stopWriters());
  }

  /** Kills every process but init and the idle one: something writes past the disk limit. */
  private async stopWriters(): Promise<void> {
    if (this.destroyed) return;
    await killProcesses(this).catch(() => undefined);
  }

  constructor(
    private readonly container: Docker.Container,
    readonly spec: SandboxSpec,
    private channel: FifoChannel | undefined,
    /** Names its container and its channel (see warm-sandboxes.ts). */
    readonly tag: string,
    /** See Sandbox.harnessDescriptorsExposed (true under gVisor). */
    readonly harnessDescriptorsExposed: boolean,
  ) {
    this.id = container.id;
  }

  /**
   * Lets go of the sandbox, left running under `name` with its channel moved to
   * `channelTarget` (parked: see DockerRuntime.park). This object is unusable afterwards.
   * @returns false when it could not be renamed (it is then still this object's).
   */
  async parkAs(name: string, channelTarget: string): Promise<boolean> {
    const channel = this.channel;
    if (this.destroyed || !channel) return false;
    const moved = await channel.parkWith(channelTarget).catch(() => undefined);
    if (!moved) return false;
    try {
      await this.container.rename({ name });
    } catch {
      this.channel = await moved.moveTo(channel.dir).catch(() => undefined);
      return false;
    }
    this.destroyed = true;
    this.unguard?.();
    this.launcher = undefined;
    this.launcherShell = undefined;
    liveSandboxes.forget(this);
    return true;
  }

  /**
   * Starts later attached processes through `shell` (one of ours in this sandbox) instead
   * of an engine exec, when the FIFO transport is in use. See shellLauncher.
   */
  launchThrough(shell: HarnessShell): void {
    this.launcherShell = shell;
    this.launcher = shellLauncher(shell);
  }

  /** Through the FIFO channel's pipes, which outlive this process. */
  readonly handOver: ShellHandOver = {
    pipes: async (role, note) => {
      if (!this.channel) throw new Error('only a sandbox with a FIFO channel hands shells over');
      return this.channel.handOverPipes(role, note);
    },
    take: async (role) => {
      const taken = await this.channel?.takeHandedOver(role);
      return taken ? { process: FifoProcess.open(taken.pipes), note: taken.note } : undefined;
    },
  };

  /** Attach through the engine from now on (the channel directory is not shared with it). */
  useAttach(): void {
    const channel = this.channel;
    this.channel = undefined;
    void channel?.remove();
  }

  private lost(what: string, error: unknown): SandboxError {
    return new SandboxError('SANDBOX_LOST', `Sandbox ${this.id.slice(0, 12)}: ${what} failed`, {
      details: { sandbox: this.id, statusCode: statusCode(error) },
      cause: error,
    });
  }

  private async startExec(
    argv: readonly string[],
    options: AttachOptions,
    stdin: boolean,
  ): Promise<{ exec: Docker.Exec; stream: Duplex }> {
    try {
      const exec = await this.container.exec({
        Cmd: [...argv],
        AttachStdin: stdin,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
        WorkingDir: options.workdir,
        Env: toEnvList(options.env),
      });
      const stream = (await exec.start({ hijack: true, stdin })) as unknown as Duplex;
      return { exec, stream };
    } catch (error) {
      throw this.lost(`starting ${argv[0]}`, error);
    }
  }

  async exec(argv: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    const started = performance.now();
    const { exec, stream } = await this.startExec(options.confined ? confined(argv) : argv, options, false);
    const output = new CappedOutput(options.maxOutputBytes);
    const parser = new MultiplexedStreamParser((payload) => {
      if (!output.push(payload)) stream.destroy();
    });
    stream.on('data', (chunk: Buffer) => {
      if (!output.over) parser.push(chunk);
    });
    const finished = new Promise<boolean>((resolve) => {
      stream.once('end', () => resolve(true));
      stream.once('close', () => resolve(true));
      stream.once('error', () => resolve(true));
    });
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<boolean>((resolve) => {
      if (options.timeoutMs !== undefined) timer = setTimeout(() => resolve(true), options.timeoutMs);
    });
    const timedOut = await Promise.race([finished.then(() => false), deadline]);
    clearTimeout(timer);
    if (timedOut) stream.destroy();
    let exitCode: number | null = null;
    if (!timedOut && !output.over) {
      try {
        exitCode = (await exec.inspect()).ExitCode ?? null;
      } catch (error) {
        throw this.lost('reading an exit code', error);
      }
    }
    return { exitCode, output: output.bytes(), timedOut, ...(output.over ? { outputLimited: true, outputBytes: output.seen } : {}), durationMs: performance.now() - started };
  }

  async attach(command: readonly string[], options: AttachOptions = {}): Promise<AttachedProcess> {
    const argv = options.confined ? confined(command) : command;
    if (this.channel) {
      try {
        // A dead launcher shell (killed, or respawning itself) cannot launch: the engine does.
        const launcher = this.launcher && this.launcherShell?.isAlive ? this.launcher : execLauncher(this.container);
        return await FifoProcess.start(launcher, this.channel, argv, options);
      } catch (error) {
        throw this.lost(`starting ${command[0]}`, error);
      }
    }
    const { stream } = await this.startExec(argv, options, true);
    return new DockerAttachedProcess(stream);
  }

  /**
   * Restarts the container (files kept). A container that is not running was stopped or
   * killed from outside: it is lost, never started again (a restart would revive it, and
   * the episode would be scored on a sandbox that died under it).
   */
  async restartProcesses(): Promise<void> {
    try {
      const { State } = await this.container.inspect();
      if (!State.Running) throw new Error(`the container is ${State.Status} (exit code ${State.ExitCode})`);
      await this.container.restart({ t: 0 });
    } catch (error) {
      throw this.lost('restarting processes', error);
    }
  }

  /**
   * Extracts `tar` at `destDir`. With the FIFO transport and our shell in the sandbox, the
   * archive is dropped into the channel directory and GNU tar in the sandbox extracts it
   * (owners, modes and mtimes kept): milliseconds instead of the engine's tens. Where that
   * tar fails (an image without it, a file type it will not replace), the engine does it.
   */
  async putArchive(tar: Buffer, destDir: string): Promise<void> {
    const shell = this.launcherShell;
    if (this.channel && shell?.isAlive) {
      const name = `.put-${randomBytes(6).toString('hex')}.tar`;
      const hostPath = join(this.channel.shared, name);
      writeFileSync(hostPath, tar, { mode: 0o600 });
      try {
        const extracted = await shell.run(`tar -x --same-owner --numeric-owner -p -f ${CHANNEL_MOUNT}/${name} -C ${shellQuote(destDir)} 2>&1`);
        if (extracted.exitCode === 0) return;
      } finally {
        rmSync(hostPath, { force: true });
      }
    }
    try {
      await this.container.putArchive(tar, { path: destDir });
    } catch (error) {
      throw this.lost(`copying files into ${destDir}`, error);
    }
  }

  /** Lays `layer` over this running sandbox through our shell in it (see launchThrough and layLayerOver). */
  private async applyLayer(layer: LayerArchive): Promise<boolean> {
    const shell = this.launcherShell;
    if (!this.channel || !shell?.isAlive) return false;
    const { isMountPoint } = await this.inspect();
    return layLayerOver({ id: this.id, image: this.spec.image, shell, shared: this.channel.shared, isMountPoint, hostFileOf: (path) => this.fromHost.fileOf(path) }, layer);
  }

  async getArchive(path: string): Promise<Buffer> {
    try {
      const stream = await this.container.getArchive({ path });
      const chunks: Buffer[] = [];
      for await (const chunk of stream) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks);
    } catch (error) {
      throw this.lost(`copying ${path} out`, error);
    }
  }

  /** The container's layers and mount points (read once). */
  private inspect(): Promise<Inspection> {
    this.inspection ??= this.container.inspect().then(
      async (info) => ({
        layers: await readableLayers(info.GraphDriver as { Name?: string; Data?: Record<string, string> }),
        isMountPoint: underAny(mountPoints(info)),
        etcFiles: await writableEtcFiles(info),
        initPid: await hostInitPid(info),
      }),
      () => {
        this.inspection = undefined; // the engine did not answer this time: ask again next time
        return { layers: undefined, isMountPoint: underAny(mountPoints(undefined)), etcFiles: new Map(), initPid: undefined };
      },
    );
    return this.inspection;
  }

  /** Read and set on this host's copy of the container (a local engine, run as root). */
  readonly fromHost: SandboxFromHost = {
    changes: (reference) => this.changesSeenFromOutside(reference),
    fileOf: async (path) => (await this.inspect()).etcFiles.get(path),
    setNextPid: async (pid) => {
      const { initPid } = await this.inspect();
      return initPid !== undefined && setNextPidFromHost(initPid, pid);
    },
  };

  readonly writtenLayer: WrittenLayer = {
    archive: (archivePath, limits, freeze) => this.archiveLayer(archivePath, limits, freeze),
    apply: (layer) => this.applyLayer(layer),
  };

  private async archiveLayer(archivePath: string, limits: LayerLimits, freeze = true): Promise<LayerArchive> {
    const { layers, etcFiles, initPid } = await this.inspect();
    if (!layers) throw new SandboxError('STATE_UNREADABLE', `Sandbox ${this.id.slice(0, 12)}: its writable layer cannot be read from this host (a remote engine, or not run as root)`, { details: { sandbox: this.id } });
    const frozen = !freeze ? undefined : ((initPid !== undefined ? cgroupFreezer(initPid, this.id) : undefined) ?? this.container);
    return archiveContainerLayer(frozen, layers.upper, etcFiles, archivePath, limits);
  }

  async changes(reference?: Sandbox): Promise<FileSystemChange[]> {
    return (reference ? await this.changesSeenFromOutside(reference) : undefined) ?? this.changesListedByEngine();
  }

  /**
   * Read on the host (a local engine, run as root): the two containers' layers compared, or
   * without `reference` the paths in this one's writable layer. Not the engine's own list,
   * which is no cheaper to get: Docker walks the whole file system for it when the kernel's
   * overlay redirects directories ("naive diff"; measured: the first runs of `bench
   * vs-intercode` at 8 envs went from 21 to 8 episodes/s).
   */
  private async changesSeenFromOutside(reference?: Sandbox): Promise<FileSystemChange[] | undefined> {
    if (!reference) {
      const { layers, isMountPoint } = await this.inspect();
      if (!layers) return undefined;
      try {
        return await writtenPaths(layers, isMountPoint);
      } catch (error) {
        throw this.lost('listing its written files', error);
      }
    }
    if (!(reference instanceof DockerSandbox)) return undefined;
    const { layers, isMountPoint } = await this.inspect();
    const theirs = (await reference.inspect()).layers;
    if (!layers || !theirs) return undefined;
    try {
      return await diffAgainstReference(layers, theirs, isMountPoint);
    } catch (error) {
      throw this.lost('comparing its files', error);
    }
  }

  private async changesListedByEngine(): Promise<FileSystemChange[]> {
    const { isMountPoint } = await this.inspect();
    try {
      const list = ((await this.container.changes()) ?? []) as { Path: string; Kind: number }[];
      const kinds = ['modified', 'added', 'deleted'] as const;
      return list.filter((c) => !isMountPoint(c.Path)).map((c) => ({ path: c.Path, kind: kinds[c.Kind] ?? 'modified' }));
    } catch (error) {
      throw this.lost('listing file changes', error);
    }
  }

  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    this.unguard?.();
    try {
      await this.container.remove({ force: true, v: true });
    } catch (error) {
      // 404: already gone; 409: its removal is already under way.
      const code = statusCode(error);
      if (code !== 404 && code !== 409) throw this.lost('removing the container', error);
    } finally {
      try {
        await this.channel?.remove();
      } finally {
        liveSandboxes.forget(this);
      }
    }
  }
}

class DockerAttachedProcess implements AttachedProcess {
  constructor(private readonly stream: Duplex) {}

  write(data: string): void {
    if (!this.stream.destroyed) this.stream.write(data);
  }

  listen(handlers: { output(chunk: Buffer): void; exit(): void }): void {
    const parser = new MultiplexedStreamParser((payload) => handlers.output(payload));
    let exited = false;
    const exit = () => {
      if (exited) return;
      exited = true;
      handlers.exit();
    };
    this.stream.on('data', (chunk: Buffer) => parser.push(chunk));
    this.stream.once('end', exit);
    this.stream.once('close', exit);
    this.stream.once('error', exit);
  }

  close(): void {
    this.stream.destroy();
  }
}
