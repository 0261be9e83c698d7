import type Docker from 'dockerode';
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { SandboxError } from '../../errors.js';
import { removeTree } from '../disk/remove-tree.js';
import { HARNESS_CAPABILITY } from '../harness-capability.js';
import { processAlive } from '../lifecycle/process-alive.js';
import { createContainer } from '../docker/container-creation.js';
import { channelRoot, FifoChannel } from '../docker/fifo-channel.js';
import { ownerLabels } from '../docker/labels.js';
import { newTag, runName } from '../docker/keep-warm/warm-sandboxes.js';
import { IDLE_PROCESS_NAME, type SandboxSpec } from '../types.js';
import { HelperClient } from './helper-client.js';
import { captureReference } from './reference-container.js';
import { hostCgroupHierarchies, initLayerEntries, rootPlan, type CgroupHierarchy } from './root-plan.js';

/**
 * The idle process's id in every root. A new container's is 6 to 8 here (however many ids its
 * runtime's set-up took first); one of them, always the same, so that roots agree with each other.
 */
const IDLE_PID = 7;

/** Marks pool containers (their value: the pool's folder on the host). */
export const POOL_LABEL = 'io.intercode-ts.root-pool';

/** Where the pool container sees the helper binary and each host cgroup hierarchy's `docker/` folder. */
const HELPER_IN_POOL = '/run/episode-root-helper';
const CGROUPS_IN_POOL = '/run/episode-root-cgroup';

/**
 * The capabilities the pool container adds to the engine's default set, and why each:
 * SYS_ADMIN to make namespaces, mount and pivot_root; DAC_READ_SEARCH so that overlayfs
 * records a copied-up folder's origin as the engine's mount does (without it the folder has
 * no origin attribute: 8 blocks instead of 16); NET_ADMIN to bring each root's `lo` up.
 */
const POOL_CAPABILITIES = ['SYS_ADMIN', 'DAC_READ_SEARCH', 'NET_ADMIN'];

export interface RootPoolOptions {
  ociRuntime: string | undefined;
  diskBytes: number;
  /** The compiled helper on this host (see helper-binary.ts). */
  helper: string;
  /**
   * A pool that is knowingly not a new container's: its plan's text changed before the
   * helper reads it, pool capabilities left out. Only for the test that proves the
   * equivalence observers catch each known way a root can differ from a new container
   * (test/integration/root-equivalence.test.ts); the product sets none.
   */
  variation?: PoolVariation;
}

/** See RootPoolOptions.variation. */
export interface PoolVariation {
  plan?(text: string): string;
  withoutCapabilities?: readonly string[];
}

/** A root made by the helper: its id (a new container's form) and folder on this host. */
export interface RootRecord {
  id: string;
  dir: string;
  /** Its first process's id in the pool container. */
  initPid: number;
}

/**
 * One long-lived container per sandbox spec, holding the episode-root helper: every root of
 * that spec is made, entered and removed by the helper in it, over one socket. Its plan comes
 * from a reference container the engine made of the same spec (captured, then removed).
 */
export class RootPool {
  private constructor(
    private readonly container: Docker.Container,
    private readonly client: HelperClient,
    /** The pool's folder on the host: its plan, and each root's folder under roots/. */
    readonly dir: string,
    /** The environment of the spec's processes (the engine's OCI spec's). */
    readonly baseEnv: readonly string[],
    /** The host folder of its roots' channels, the only one of the channel root the pool sees. */
    readonly channels: string,
  ) {}

  static async start(docker: Docker, spec: SandboxSpec, options: RootPoolOptions): Promise<RootPool> {
    const info = (await docker.info()) as { DockerRootDir?: string; Driver?: string };
    if (info.Driver !== 'overlay2') throw new SandboxError('SANDBOX_UNAVAILABLE', `Episode roots need the overlay2 storage driver (the engine has ${info.Driver})`);
    const capture = await withReference(docker, spec, options, async (id) => {
      const captured = await captureReference(docker, id);
      return { ...captured, initEntries: initLayerEntries(captured.initLayer) };
    });
    const layerRoot = dirname(capture.imageLayers[0] ?? '/var/lib/docker/overlay2/l/x').replace(/\/l$/, '');
    // The uppers sit on the image layers' file system: folder sizes, blocks and inode numbers then behave as the engine's.
    const base = poolsBase(info);
    await mkdir(base, { recursive: true, mode: 0o700 });
    const [baseDevice, layerDevice] = await Promise.all([stat(base), stat(layerRoot)]);
    if (baseDevice.dev !== layerDevice.dev) throw new SandboxError('SANDBOX_UNAVAILABLE', `Episode roots need ${base} on the file system of ${layerRoot}`);
    const dir = join(base, `${process.pid}-${newTag()}`);
    await mkdir(join(dir, 'roots'), { recursive: true, mode: 0o700 });
    const hierarchies = hostCgroupHierarchies();
    const cgroups: CgroupHierarchy[] = hierarchies.map((h) => ({ name: h.name, poolPath: `${CGROUPS_IN_POOL}/${h.name}` }));
    const planPath = join(dir, 'plan');
    const plan = rootPlan({ spec: capture.spec, imageLayers: capture.imageLayers, initEntries: capture.initEntries, cgroups, idlePid: IDLE_PID, ...(spec.command ? {} : { idleName: IDLE_PROCESS_NAME }), devices: capture.devices, mountModes: capture.mountModes, execGap: capture.execGap, harnessCapability: HARNESS_CAPABILITY, rlimits: capture.rlimits });
    await writeFile(planPath, options.variation?.plan?.(plan) ?? plan);
    const socketPath = join(dir, 'helper.sock');
    // Named as a channel folder is (its maker's id first): a dead run's is removed as its channels are.
    const channels = join(channelRoot(), `${process.pid}-${newTag()}`);
    const binds = [
      `${options.helper}:${HELPER_IN_POOL}:ro`,
      `${layerRoot}:${layerRoot}:ro`,
      `${dir}:${dir}`,
      // Writable for the helper's FIFOs (makeFifos); a root sees only its own channel's shared/, read-only.
      // The pool's roots' channels only: no other sandbox's is in reach of the pool.
      `${channels}:${channels}`,
      ...hierarchies.map((h) => `${h.hostPath}/docker:${CGROUPS_IN_POOL}/${h.name}`),
      // What the engine binds into a container from the host (docker-init, the spec's folders), at the same path.
      ...capture.spec.mounts
        .filter((m) => m.type === 'bind' && m.source && m.destination !== '/run/intercode' && m.destination !== '/etc/hostname')
        .map((m) => `${m.source}:${m.source}${(m.options ?? []).includes('ro') ? ':ro' : ''}`),
    ];
    await mkdir(channels, { recursive: true, mode: 0o700 });
    let container: Docker.Container | undefined;
    try {
      container = await docker.createContainer({
        name: runName(`pool-${newTag()}`),
        Image: spec.image,
        Entrypoint: [HELPER_IN_POOL],
        Cmd: [planPath, socketPath],
        WorkingDir: '/',
        Labels: { ...ownerLabels(), ...spec.labels, [POOL_LABEL]: dir },
        NetworkDisabled: true,
        // Removed by the engine once its helper exits (the harness closed the socket, or died).
        HostConfig: {
          NetworkMode: 'none', Init: true, AutoRemove: true, CapAdd: POOL_CAPABILITIES.filter((cap) => !options.variation?.withoutCapabilities?.includes(cap)),
          SecurityOpt: ['seccomp=unconfined'], Binds: binds, ...(options.ociRuntime ? { Runtime: options.ociRuntime } : {}) },
      });
      await container.start();
      const client = await HelperClient.connect(socketPath, 15_000);
      return new RootPool(container, client, dir, capture.spec.process.env, channels);
    } catch (error) {
      const logs = await container?.logs({ stdout: true, stderr: true }).catch(() => undefined);
      await container?.remove({ force: true }).catch(() => undefined);
      await Promise.all([dir, channels].map(removeTree));
      throw new SandboxError('SANDBOX_UNAVAILABLE', `Could not start the episode-root pool for ${spec.image}: ${String(error)} ${logs ? String(logs).slice(0, 500) : ''}`, { cause: error });
    }
  }

  get alive(): boolean {
    return this.client.alive;
  }

  /** Owner-only FIFOs at these host paths (in a channel folder), made by the helper: no host process per batch. */
  readonly makeFifos = async (paths: readonly string[]): Promise<void> => {
    await this.client.request('F', ...paths);
  };

  /**
   * A new root whose /run/intercode is `channel`'s shared folder. With `prepareUpper`: its
   * upper folder is made first and given to it (a checkpoint's layer extracted there), and
   * the root's overlay starts on what it holds.
   */
  async createRoot(channel: string, prepareUpper?: (upper: string) => Promise<void>): Promise<RootRecord> {
    const id = randomBytes(32).toString('hex');
    const dir = join(this.dir, 'roots', id);
    try {
      if (prepareUpper) {
        await mkdir(dir, { mode: 0o700 });
        await mkdir(join(dir, 'upper'), { mode: 0o755 });
        await prepareUpper(join(dir, 'upper'));
      }
      const initPid = Number(await this.client.request('C', id, dir, channel, ...(prepareUpper ? ['u'] : [])));
      return { id, dir, initPid };
    } catch (error) {
      // A refused root leaves no half (see the helper): its folder goes with it.
      await removeTree(dir);
      throw error;
    }
  }

  /**
   * Starts `argv` in root `id` on the FIFOs `pipes` (paths in the root, opened already on our
   * side). Flags: `c` without the harness's capability, `x` report its exit (see exitOf).
   * @returns its id in the pool container.
   */
  async launch(id: string, argv: readonly string[], options: { cwd: string; env: readonly string[]; flags: string }, pipes: { in: string; out: string; ctl: string }): Promise<number> {
    const reply = await this.client.request('L', id, options.flags, options.cwd, String(options.env.length), ...options.env, String(argv.length), ...argv, pipes.in, pipes.out, pipes.ctl);
    return Number(reply);
  }

  exitOf(pid: number): Promise<number> {
    return this.client.exitOf(pid);
  }

  async setNextPid(id: string, pid: number): Promise<void> {
    await this.client.request('P', id, String(pid));
  }

  /**
   * Kills every process of root `id` and releases its namespaces and cgroups; then `folders`
   * (the root's, its channel's: paths this pool sees at the same place) are removed off the
   * episode's path by the helper's remover, a backlog bounded by its pipe.
   */
  async kill(id: string, folders: readonly string[] = []): Promise<void> {
    await this.client.request('K', id, ...folders);
  }

  async close(): Promise<void> {
    this.client.close();
    await this.container.remove({ force: true }).catch(() => undefined);
    await Promise.all([this.dir, this.channels].map(removeTree));
  }
}

/** Runs `use` on a new container of `spec` made by the engine as a sandbox would be, then removes it. */
async function withReference<T>(docker: Docker, spec: SandboxSpec, options: RootPoolOptions, use: (id: string) => Promise<T>): Promise<T> {
  const tag = newTag();
  const channel = await FifoChannel.create(tag);
  try {
    const container = await createContainer(docker, spec, { tag, channel, ociRuntime: options.ociRuntime, diskBytes: options.diskBytes, quotaBytes: 0 });
    try {
      return await use(container.id);
    } finally {
      await container.remove({ force: true }).catch(() => undefined);
    }
  } finally {
    await channel.remove();
  }
}

/** Where the pools' folders are: beside the engine's data root (the uppers sit on the layers' file system). */
function poolsBase(info: { DockerRootDir?: string }): string {
  return join(dirname(info.DockerRootDir ?? '/var/lib/docker'), 'intercode-roots');
}

/**
 * Removes the pool folders (each root's upper, work and init folders, the plan) that a
 * process of this host left when it died without closing its pools, once no pool container
 * of theirs is left on the engine (its overlays are mounted there until the engine removes it).
 * @returns how many folders were removed.
 */
export async function removeOrphanPoolFolders(docker: Docker): Promise<number> {
  const base = poolsBase((await docker.info()) as { DockerRootDir?: string });
  const names = await readdir(base).catch(() => [] as string[]);
  const pools = await docker.listContainers({ all: true, filters: { label: [POOL_LABEL] } });
  const inUse = new Set(pools.map((c) => c.Labels[POOL_LABEL]));
  const orphans = names.filter((name) => {
    const owner = /^(\d+)-[0-9a-f]+$/.exec(name);
    return owner !== null && !processAlive(Number(owner[1])) && !inUse.has(join(base, name));
  });
  await Promise.all(orphans.map((name) => removeTree(join(base, name))));
  return orphans.length;
}

