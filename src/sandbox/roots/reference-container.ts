import type Docker from 'dockerode';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { SandboxError } from '../../errors.js';
import { MultiplexedStreamParser } from '../docker/demux.js';
import { hostCgroupHierarchies, type OciSpec, type ResourceLimit } from './root-plan.js';

/** Where containerd's shims keep a running container's bundle, by engine layout. */
const BUNDLE_ROOTS = ['/run/docker/containerd/daemon/io.containerd.runtime.v2.task/moby', '/run/containerd/io.containerd.runtime.v2.task/moby'];

/** What a new container of an image is, as the engine made one (see root-plan.ts). */
export interface ReferenceCapture {
  spec: OciSpec;
  /** The image's layers as the engine's overlay lists them (its lowerdir without the init layer), top first. */
  imageLayers: string[];
  /** The container's init layer on the host. */
  initLayer: string;
  /** Its devices cgroup's rules as the kernel lists them. */
  devices: string[];
  /**
   * Ids the engine's exec takes after its process's own before that process forks (runc's
   * init, a Go program, starts threads in the container's PID namespace before it execs).
   */
  execGap: number;
  /** The mode of each mount point the runtime mounted (not a bind), as the container shows it. */
  mountModes: { path: string; mode: number }[];
  /** Its first process's resource limits (its /proc/<pid>/limits, rows in resource order: what every process of a new container starts with). */
  rlimits: ResourceLimit[];
}

/** The rows of /proc/<pid>/limits (the kernel prints them in resource-number order), as soft and hard limits. */
export function parseLimits(text: string): ResourceLimit[] {
  return text
    .split('\n')
    .slice(1)
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const match = /^Max [a-z ]+?\s{2,}(\d+|unlimited)\s+(\d+|unlimited)/.exec(line);
      if (!match) throw new Error(`unexpected /proc/<pid>/limits line: ${line}`);
      return { soft: match[1]!, hard: match[2]! };
    });
}

/**
 * Reads a running container's OCI spec, overlay, devices cgroup and mount point modes from the host (a local
 * engine with runc, run as root).
 * @throws SandboxError SANDBOX_UNAVAILABLE when something cannot be read (another runtime, not root).
 */
export async function captureReference(docker: Docker, id: string): Promise<ReferenceCapture> {
  const info = await docker.getContainer(id).inspect();
  const fail = (what: string, cause?: unknown) =>
    new SandboxError('SANDBOX_UNAVAILABLE', `Episode roots need a local runc engine run as root: ${what}`, { details: { container: id }, ...(cause ? { cause } : {}) });
  let spec: OciSpec | undefined;
  for (const root of BUNDLE_ROOTS) {
    const text = await readFile(join(root, info.Id, 'config.json'), 'utf8').catch(() => undefined);
    if (text) {
      spec = JSON.parse(text) as OciSpec;
      break;
    }
  }
  if (!spec) throw fail(`the engine's OCI spec of container ${info.Id.slice(0, 12)} is in none of ${BUNDLE_ROOTS.join(', ')}`);
  const pid = info.State.Pid;
  const mountinfo = await readFile(`/proc/${pid}/mountinfo`, 'utf8').catch((error: unknown) => {
    throw fail(`cannot read /proc/${pid}/mountinfo`, error);
  });
  const rootLine = mountinfo.split('\n').find((line) => line.split(' ')[4] === '/');
  const lowerdir = /lowerdir=([^,]+)/.exec(rootLine ?? '')?.[1];
  const initLayer = (info.GraphDriver.Data as Record<string, string> | undefined)?.LowerDir?.split(':')[0];
  if (!lowerdir || !initLayer?.endsWith('-init/diff')) throw fail('its root is not an overlay2 mount with an init layer');
  const devicesRoot = hostCgroupHierarchies().find((h) => h.name === 'devices')?.hostPath;
  const cgroupsPath = (spec.linux as { cgroupsPath?: string }).cgroupsPath ?? `/docker/${info.Id}`;
  const devicesList = devicesRoot ? await readFile(join(devicesRoot, cgroupsPath, 'devices.list'), 'utf8').catch(() => undefined) : '';
  if (devicesList === undefined) throw fail(`cannot read its devices cgroup (${cgroupsPath})`);
  const devices = devicesList.split('\n').filter((line) => line.trim() !== '');
  const mountModes: { path: string; mode: number }[] = [];
  for (const mount of spec.mounts) {
    if (mount.type === 'bind') continue;
    const stats = await stat(`/proc/${pid}/root${mount.destination}`).catch(() => undefined);
    if (stats) mountModes.push({ path: mount.destination, mode: stats.mode & 0o7777 });
  }
  const limits = await readFile(`/proc/${pid}/limits`, 'utf8').catch((error: unknown) => {
    throw fail(`cannot read /proc/${pid}/limits`, error);
  });
  const rlimits = parseLimits(limits);
  const execGap = await measureExecGap(docker.getContainer(info.Id));
  if (execGap === undefined) throw fail('an exec in it did not report its process ids');
  return { spec, imageLayers: lowerdir.split(':').slice(1), initLayer, devices, mountModes, execGap, rlimits };
}

/** {@link ReferenceCapture.execGap}: an exec that prints its id and its first child's. */
async function measureExecGap(container: Docker.Container): Promise<number | undefined> {
  const exec = await container.exec({ Cmd: ['/bin/sh', '-c', 'echo "$$ $(sh -c \'echo $$\')"'], AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  const chunks: Buffer[] = [];
  const parser = new MultiplexedStreamParser((payload) => chunks.push(Buffer.from(payload)));
  await new Promise<void>((resolve) => {
    stream.on('data', (chunk: Buffer) => parser.push(chunk));
    stream.once('end', () => resolve());
    stream.once('close', () => resolve());
  });
  const text = Buffer.concat(chunks).toString('latin1');
  const match = /(\d+) (\d+)\s*$/.exec(text.trim());
  if (!match) return undefined;
  const gap = Number(match[2]) - Number(match[1]) - 1;
  return gap >= 0 && gap < 64 ? gap : undefined;
}
