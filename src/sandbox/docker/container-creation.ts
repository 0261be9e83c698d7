import type Docker from 'dockerode';
import { createHash } from 'node:crypto';
import { ImageError, SandboxError } from '../../errors.js';
import { IDLE_PROCESS_NAME, type LayerArchive, type Mount, type SandboxSpec } from '../types.js';
import { HARNESS_CAPABILITY } from '../harness-capability.js';
import { statusCode } from './engine.js';
import { CHANNEL_MOUNT, type FifoChannel } from './fifo-channel.js';
import { STATX_SHIM_ENV, statxShimArchive } from './gvisor-statx.js';
import { createdUpperDir, extractLayer } from './layer-archive.js';
import { CHANNEL_LABEL, ownerLabels } from './labels.js';
import { runName } from './keep-warm/warm-sandboxes.js';

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

/** How {@link createContainer} makes one container: what the runtime decided for it. */
export interface ContainerPlan {
  /** Names the container and its channel (see warm-sandboxes.ts). */
  tag: string;
  /** Its FIFO channel (the shared directory is mounted read-only at CHANNEL_MOUNT); undefined with the attach transport. */
  channel: Pick<FifoChannel, 'dir' | 'shared'> | undefined;
  /** The OCI runtime (undefined: the engine's default). */
  ociRuntime: string | undefined;
  /** Bytes it may write (its file-size limit). */
  diskBytes: number;
  /** The engine's quota on it (`--storage-opt size`), its image included; 0: none (the engine cannot hold one). */
  quotaBytes: number;
  /** A checkpoint's writable layer, put in before the container starts (overlayfs mounts it as the container's own). */
  layer?: LayerArchive;
}

/**
 * Creates and starts the container of a sandbox for `spec`: no network, resource limits, no
 * new privileges, every capability dropped but those the spec names, the host's kernel
 * paths masked, docker-init reaping orphans.
 * @throws ImageError IMAGE_MISSING when the engine has no such image; SandboxError
 *   SANDBOX_UNAVAILABLE when it cannot be created or started (then nothing is left behind).
 */
export async function createContainer(docker: Docker, spec: SandboxSpec, plan: ContainerPlan): Promise<Docker.Container> {
  const { tag, channel, ociRuntime, diskBytes, quotaBytes } = plan;
  const channelMount: Mount[] = channel ? [{ hostPath: channel.shared, containerPath: CHANNEL_MOUNT, readOnly: true }] : [];
  const mounts = [...(spec.mounts ?? []), ...channelMount];
  // gVisor's statx refuses a flag coreutils passes: a preloaded library drops it (see gvisor-statx.ts).
  const statxShim = ociRuntime === 'runsc' ? await statxShimArchive() : undefined;
  let container: Docker.Container;
  try {
    container = await docker.createContainer({
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
        CapAdd: [...new Set([...spec.capabilities, HARNESS_CAPABILITY])],
        SecurityOpt: ['no-new-privileges:true'],
        MaskedPaths: [...MASKED_PATHS],
        // No file may outgrow the disk limit, whatever the engine (a write past it fails with EFBIG).
        Ulimits: [{ Name: 'fsize', Soft: diskBytes, Hard: diskBytes }],
        ...(quotaBytes > 0 ? { StorageOpt: { size: String(quotaBytes) } } : {}),
        ...(ociRuntime ? { Runtime: ociRuntime } : {}),
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
    if (plan.layer) await extractLayer(plan.layer, await createdUpperDir(container));
    await container.start();
  } catch (error) {
    await container.remove({ force: true }).catch(() => undefined);
    throw new SandboxError('SANDBOX_UNAVAILABLE', `Could not start a sandbox from ${spec.image}`, {
      details: { image: spec.image },
      cause: error,
    });
  }
  return container;
}
