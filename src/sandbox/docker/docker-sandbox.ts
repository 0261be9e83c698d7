import type Docker from 'dockerode';
import { createHash, randomBytes } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { setPriority } from 'node:os';
import { packagePath } from '../../package-path.js';
import { constants, existsSync, rmSync, writeFileSync } from 'node:fs';
import { access, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { ImageError, SandboxError } from '../../errors.js';
import {
  DEFAULT_DISK_BYTES,
  IDLE_PROCESS_NAME,
  type DiskEnforcement,
  type DiskLimit,
  type AttachedProcess,
  type AttachOptions,
  type ExecOptions,
  type ExecResult,
  type FileSystemChange,
  type Sandbox,
  type SandboxRuntime,
  type SandboxSpec,
  type WarmRole,
} from '../types.js';
import { liveSandboxes } from '../lifecycle/registry.js';
import { MultiplexedStreamParser } from './demux.js';
import { CappedOutput } from '../capped-output.js';
import type { ShellSession } from '../shell/shell-session.js';
import { CHANNEL_MOUNT, channelRoot, execLauncher, FifoChannel, FifoProcess, shellLauncher, type Launcher } from './fifo-channel.js';
import { channelDir, claimParked, listParked, newTag, runName, warmName, type ParkedSandbox } from './warm-sandboxes.js';
import { liveKeeper } from './warm-keeper-lock.js';
import { hostInitPid, setNextPidFromHost } from './next-pid.js';
import { diffAgainstReference, readableLayers, writtenPaths, type LayerPaths } from './layer-diff.js';
import { CHANNEL_LABEL, ownerLabels, TEST_LABEL } from './labels.js';
import { killProcesses } from '../shell/kill-processes.js';
import { SHELL_SCRIPT, shellQuote } from '../shell/shell-script.js';
import { LayerWatch } from '../disk/layer-usage.js';
import { diskGuard } from '../disk/disk-guard.js';
import { STATX_SHIM_ENV, statxShimArchive } from './gvisor-statx.js';
import { confined, HARNESS_CAPABILITY } from '../harness-capability.js';

/** The shell program's digest: part of a parked sandbox's key (see warmKey). */
const SHELL_DIGEST = createHash('sha256').update(SHELL_SCRIPT).digest('hex').slice(0, 16);

function statusCode(error: unknown): number | undefined {
  return typeof error === 'object' && error !== null && 'statusCode' in error
    ? (error as { statusCode?: number }).statusCode
    : undefined;
}

function toEnvList(env: Readonly<Record<string, string>> | undefined): string[] | undefined {
  return env ? Object.entries(env).map(([k, v]) => `${k}=${v}`) : undefined;
}

/**
 * How attached processes (the persistent shells) talk to us. `fifo`: named pipes in a host
 * directory mounted into the sandbox (the engine must run on this host; see FifoProcess).
 * `attach`: a stream relayed by the engine (works with any engine, remote ones included).
 */
export type Transport = 'fifo' | 'attach';

export interface DockerRuntimeOptions {
  /** Default: `fifo` for an engine on a local Unix socket, `attach` otherwise. */
  transport?: Transport;
  /**
   * The OCI runtime the engine runs sandboxes with, by its name in the engine's
   * configuration: `runc`, `runsc` (gVisor)… Default: INTERCODE_RUNTIME, else the engine's default.
   */
  ociRuntime?: string;
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

/**
 * The kernel paths a sandbox sees empty: Docker's own defaults (given again: a list replaces
 * them), then the host's slab caches, memory blocks, block devices, terminals and backing
 * devices — 12,000 of the 16,500 entries this VM's /sys showed a sandbox. Nothing an agent's
 * task needs: they describe the host (its loop devices, its kernel's caches), and every
 * `find /` walked them (a third of its time here).
 */
export const MASKED_PATHS: readonly string[] = [
  '/proc/asound',
  '/proc/acpi',
  '/proc/kcore',
  '/proc/keys',
  '/proc/latency_stats',
  '/proc/timer_list',
  '/proc/timer_stats',
  '/proc/sched_debug',
  '/proc/scsi',
  '/sys/firmware',
  '/sys/devices/virtual/powercap',
  '/sys/kernel/slab',
  '/sys/devices/system/memory',
  '/sys/devices/virtual/block',
  '/sys/devices/virtual/tty',
  '/sys/devices/virtual/bdi',
];

const MASKED_DIGEST = createHash('sha256').update(MASKED_PATHS.join('\n')).digest('hex').slice(0, 8);

/** {@link SandboxRuntime.systemView} of Docker sandboxes under `ociRuntime` (undefined: the engine's default). */
export function dockerSystemView(ociRuntime: string | undefined): string {
  return `docker/${ociRuntime ?? 'default'}/masked:${MASKED_DIGEST}`;
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
    this.ociRuntime = options.ociRuntime ?? (process.env.INTERCODE_RUNTIME || undefined);
    // FIFOs in a bind mount are runc's: gVisor's gofer does not open them (measured: the shell never starts).
    const fifoCapable = local && (this.ociRuntime === undefined || this.ociRuntime === 'runc');
    this.transport = options.transport ?? (process.env.INTERCODE_TRANSPORT === 'attach' || !fifoCapable ? 'attach' : 'fifo');
    this.local = local;
  }

  private readonly local: boolean;

  get systemView(): string {
    return dockerSystemView(this.ociRuntime);
  }

  /**
   * Whether agents' processes are started without the harness's capability (see
   * harness-capability.ts): everywhere but under gVisor, whose kernel has no
   * /proc/sys/kernel/cap_last_cap, so that setpriv cannot change the bounding set ("apply
   * bounding set: Invalid argument"); there the agent's processes are as before, and can
   * reach the harness's (docs/security.md, "Not covered").
   */
  get confinesAgents(): boolean {
    return this.ociRuntime !== 'runsc';
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

  private async createStarted(spec: SandboxSpec): Promise<DockerSandbox> {
    const tag = newTag();
    const channel = this.transport === 'fifo' ? await FifoChannel.create(tag) : undefined;
    try {
      const sandbox = await this.createContainer(spec, channel, tag);
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
    await writeFile(join(channel.shared, '.probe'), token);
    const seen = await sandbox.exec(['cat', `${CHANNEL_MOUNT}/.probe`], { timeoutMs: 10_000 });
    if (seen.output.toString() === token) this.fifoChecked = true;
    else {
      this.transport = 'attach';
      sandbox.useAttach();
    }
  }

  private async createContainer(spec: SandboxSpec, channel: FifoChannel | undefined, tag: string): Promise<DockerSandbox> {
    const mounts = [...(spec.mounts ?? []), ...(channel ? [{ hostPath: channel.shared, containerPath: CHANNEL_MOUNT, readOnly: true }] : [])];
    const diskBytes = spec.limits.diskBytes ?? defaultDiskBytes();
    const driver = await this.storageDriver();
    const engineQuota = engineHoldsDiskLimit(driver);
    // The engine's quota covers what the container references, its image included (btrfs qgroups).
    const quotaBytes = engineQuota ? diskBytes + (await this.image(spec.image)).bytes : 0;
    // gVisor's statx refuses a flag coreutils passes: a preloaded library drops it (see gvisor-statx.ts).
    const statxShim = this.ociRuntime === 'runsc' ? await statxShimArchive() : undefined;
    let container: Docker.Container;
    try {
      container = await this.docker.createContainer({
        name: runName(tag),
        Image: spec.image,
        Hostname: spec.hostname,
        // The spec's main process, by default an idle one; docker-init above it reaps orphans.
        Entrypoint: spec.command ? [...spec.command.slice(0, 1)] : ['bash'],
        Cmd: spec.command ? [...spec.command.slice(1)] : ['-c', `exec -a ${IDLE_PROCESS_NAME} sleep infinity`],
        WorkingDir: '/',
        ...(statxShim ? { Env: [STATX_SHIM_ENV] } : {}),
        Labels: { ...ownerLabels(), ...spec.labels, ...(channel ? { [CHANNEL_LABEL]: channel.dir } : {}) },
        NetworkDisabled: true,
        HostConfig: {
          NetworkMode: 'none',
          Init: true,
          Memory: spec.limits.memoryBytes,
          MemorySwap: spec.limits.memoryBytes,
          PidsLimit: spec.limits.pids,
          NanoCpus: Math.round(spec.limits.cpus * 1e9),
          CapDrop: ['ALL'],
          // The harness's processes hold one capability the agent's drop (see harness-capability.ts).
          CapAdd: [...new Set([...spec.capabilities, ...(this.confinesAgents ? [HARNESS_CAPABILITY] : [])])],
          SecurityOpt: ['no-new-privileges:true'],
          MaskedPaths: [...MASKED_PATHS],
          // No file may outgrow the disk limit, whatever the engine (a write past it fails with EFBIG).
          Ulimits: [{ Name: 'fsize', Soft: diskBytes, Hard: diskBytes }],
          ...(engineQuota ? { StorageOpt: { size: String(quotaBytes) } } : {}),
          ...(this.ociRuntime ? { Runtime: this.ociRuntime } : {}),
          Binds: mounts.map((m) => `${m.hostPath}:${m.containerPath}${m.readOnly ? ':ro' : ''}`),
        },
      });
    } catch (error) {
      if (statusCode(error) === 404) {
        throw new ImageError('IMAGE_MISSING', `Image ${spec.image} does not exist; build it with \`intercode images build\`.`, {
          details: { image: spec.image },
          cause: error,
        });
      }
      throw new SandboxError('SANDBOX_UNAVAILABLE', `Could not create a sandbox from ${spec.image}`, {
        details: { image: spec.image },
        cause: error,
      });
    }
    try {
      if (statxShim) await container.putArchive(statxShim, { path: '/' });
      await container.start();
    } catch (error) {
      await container.remove({ force: true }).catch(() => undefined);
      throw new SandboxError('SANDBOX_UNAVAILABLE', `Could not start a sandbox from ${spec.image}`, {
        details: { image: spec.image },
        cause: error,
      });
    }
    const sandbox = new DockerSandbox(container, spec, channel, tag, this.confinesAgents);
    await sandbox.holdDisk(this.diskEnforcement(driver), diskBytes);
    return sandbox;
  }

  /**
   * The configuration a parked sandbox must match to be adopted for `spec`: the image's id
   * (a rebuilt tag is another image), the spec (limits, mounts, labels…), the OCI runtime,
   * the masked kernel paths, the transport and channel root, the disk limit, the test run,
   * and the shell program its control shell runs (another version of the harness may speak
   * another protocol to it).
   */
  private async warmKey(spec: SandboxSpec): Promise<string> {
    const { id: imageId } = await this.image(spec.image);
    if (imageId === undefined) throw new Error(`image ${spec.image} cannot be inspected`);
    const configuration = {
      imageId,
      spec,
      ociRuntime: this.ociRuntime ?? null,
      maskedPaths: MASKED_PATHS,
      transport: this.transport,
      channels: this.transport === 'fifo' ? channelRoot() : null,
      diskBytes: spec.limits.diskBytes ?? defaultDiskBytes(),
      testRun: ownerLabels()[TEST_LABEL] ?? null,
      shell: SHELL_DIGEST,
      // A sandbox made before agents' shells were confined lacks the capability they drop.
      harnessCapability: this.confinesAgents ? HARNESS_CAPABILITY : null,
    };
    return createHash('sha256').update(JSON.stringify(configuration)).digest('hex').slice(0, 16);
  }

  async park(sandbox: Sandbox, role: WarmRole, ttlMs: number): Promise<boolean> {
    // Without its keeper (code run from src/ before a build) a parked sandbox would never expire.
    if (!this.keepsWarm || !(sandbox instanceof DockerSandbox) || ttlMs <= 0) return false;
    const key = await this.warmKey(sandbox.spec).catch(() => undefined);
    if (!key || !(await sandbox.parkAs(warmName(key, role, Date.now() + ttlMs, sandbox.tag), channelDir(sandbox.tag, 'warm')))) return false;
    // This process's next adoption lists again (and may take this one back).
    this.parkedLists.clear();
    this.startKeeper();
    return true;
  }

  /**
   * Whether sandboxes can be kept warm between processes: with the FIFO transport (the claim
   * on a parked sandbox is its channel directory, see warm-sandboxes.ts) and the compiled
   * keeper (code run from src/ before a build has none: a parked sandbox would never expire).
   */
  private get keepsWarm(): boolean {
    this.keeperBuilt ??= existsSync(KEEPER_SCRIPT);
    return this.transport === 'fifo' && this.keeperBuilt;
  }

  /** Whether the compiled keeper exists (looked up once). */
  private keeperBuilt: boolean | undefined;

  async adopt(spec: SandboxSpec, role: WarmRole): Promise<Sandbox | undefined> {
    if (!this.keepsWarm) return undefined;
    return liveSandboxes.adopt(this.adoptParked(spec, role));
  }

  /** Parked sandboxes listed, per configuration and role, for {@link adoptParked} to claim from (see PARKED_LIST_MS; a parking here clears it). */
  private readonly parkedLists = new Map<string, { listedAt: number; parked: Promise<ParkedSandbox[]> }>();

  /** The next parked sandbox of `key` and `role` this process claims; undefined when none is left. */
  private async claimNextParked(key: string, role: WarmRole): Promise<{ id: string; tag: string } | undefined> {
    const listKey = `${key}.${role}`;
    let listed = this.parkedLists.get(listKey);
    if (!listed || performance.now() - listed.listedAt > PARKED_LIST_MS) {
      listed = { listedAt: performance.now(), parked: listParked(this.docker, key, role) };
      this.parkedLists.set(listKey, listed);
    }
    const parked = await listed.parked.catch(() => [] as ParkedSandbox[]);
    for (let next = parked.shift(); next; next = parked.shift()) {
      const claimed = await claimParked(this.docker, next);
      if (claimed) return claimed;
    }
    return undefined;
  }

  private async adoptParked(spec: SandboxSpec, role: WarmRole): Promise<DockerSandbox | undefined> {
    const key = await this.warmKey(spec).catch(() => undefined);
    const found = key ? await this.claimNextParked(key, role) : undefined;
    if (!found) return undefined;
    // Its channel is this process's already (the claim).
    const channel = await FifoChannel.takeOver(channelDir(found.tag, process.pid));
    const sandbox = new DockerSandbox(this.docker.getContainer(found.id), spec, channel, found.tag, this.confinesAgents);
    try {
      await sandbox.holdDisk(this.diskEnforcement(await this.storageDriver()), spec.limits.diskBytes ?? defaultDiskBytes());
    } catch (error) {
      await sandbox.destroy().catch(() => undefined);
      throw error;
    }
    return sandbox;
  }

  /** The keeper this process started, until it exits (it takes a moment to write its pid file). */
  private keeperChild: ChildProcess | undefined;

  /**
   * Makes sure the process that removes parked sandboxes when their time is up
   * (warm-keeper.ts) runs: when none is alive, starts one, detached, so it outlives this
   * process. It exits when none is left (looking once more after letting go of its lock,
   * so a sandbox parked while it was exiting is never left without one).
   */
  private startKeeper(): void {
    if (liveKeeper() !== undefined || this.keeperChild) return;
    const socketPath = (this.docker.modem as { socketPath?: string }).socketPath!;
    const child = spawn(process.execPath, [KEEPER_SCRIPT, socketPath], { detached: true, stdio: 'ignore' });
    this.keeperChild = child;
    const gone = () => {
      if (this.keeperChild === child) this.keeperChild = undefined;
    };
    child.on('error', gone);
    child.on('exit', gone);
    // The lowest priority: its start-up alone (~0.3 s of CPU, measured) would otherwise take
    // a share of the cores from the command that comes next, which it only has to outlive.
    try {
      if (child.pid !== undefined) setPriority(child.pid, KEEPER_NICENESS);
    } catch {
      // Not allowed here: it runs at ours.
    }
    child.unref();
  }
}

/**
 * How long a listing of parked sandboxes serves adoptions before the engine is asked again:
 * a pool filling itself adopts one sandbox after another, and each engine listing costs the
 * engine milliseconds of CPU per container it holds.
 */
const PARKED_LIST_MS = 2_000;

/** The keeper's niceness: the lowest priority there is (it removes idle sandboxes, nothing waits on it). */
const KEEPER_NICENESS = 19;

/** The compiled keeper of parked sandboxes (warm-keeper.ts). */
const KEEPER_SCRIPT = packagePath('dist', 'src', 'sandbox', 'docker', 'warm-keeper.js');

/** INTERCODE_DISK_LIMIT_MIB (set by `--disk-limit`), else {@link DEFAULT_DISK_BYTES}. */
function defaultDiskBytes(): number {
  const mib = Number(process.env.INTERCODE_DISK_LIMIT_MIB);
  return Number.isInteger(mib) && mib > 0 ? mib * 2 ** 20 : DEFAULT_DISK_BYTES;
}

/**
 * Storage drivers on which sandboxes are created with `--storage-opt size=`, the engine then
 * holding their disk limit. Not overlay2: it holds one only on XFS with project quotas, which
 * this project cannot test (the kernel here refuses them); there the limit is watched.
 */
const ENGINE_QUOTA_DRIVERS = new Set(['btrfs', 'zfs']);

/** Whether sandboxes on an engine with this storage driver get a disk limit the engine holds. */
export function engineHoldsDiskLimit(driver: string): boolean {
  return ENGINE_QUOTA_DRIVERS.has(driver);
}

export class DockerSandbox implements Sandbox {
  readonly id: string;
  private destroyed = false;
  private inspection: Promise<Inspection> | undefined;
  private launcher: Launcher | undefined;
  private launcherShell: ShellSession | undefined;
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
    /** Whether a confined process is started without the harness's capability (see DockerRuntime.confinesAgents). */
    private readonly confinesAgents: boolean,
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
  launchThrough(shell: ShellSession): void {
    this.launcherShell = shell;
    this.launcher = shellLauncher(shell);
  }

  async handOverPipes(role: string, note: string): Promise<string> {
    if (!this.channel) throw new Error('only a sandbox with a FIFO channel hands shells over');
    return this.channel.handOverPipes(role, note);
  }

  async takeHandedOver(role: string): Promise<{ process: AttachedProcess; note: string } | undefined> {
    const taken = await this.channel?.takeHandedOver(role);
    return taken ? { process: FifoProcess.open(taken.pipes), note: taken.note } : undefined;
  }

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
    const { exec, stream } = await this.startExec(options.confined && this.confinesAgents ? confined(argv) : argv, options, false);
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
    const argv = options.confined && this.confinesAgents ? confined(command) : command;
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
        initPid: hostInitPid(info),
      }),
      () => ({ layers: undefined, isMountPoint: underAny(mountPoints(undefined)), etcFiles: new Map(), initPid: undefined }),
    );
    return this.inspection;
  }

  async setNextPid(pid: number): Promise<boolean> {
    const { initPid } = await this.inspect();
    return initPid !== undefined && setNextPidFromHost(initPid, pid);
  }

  async hostFileOf(path: string): Promise<string | undefined> {
    return (await this.inspect()).etcFiles.get(path);
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
  async changesSeenFromOutside(reference?: Sandbox): Promise<FileSystemChange[] | undefined> {
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
