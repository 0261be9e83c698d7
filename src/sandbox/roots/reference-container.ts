import type Docker from 'dockerode';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SandboxError } from '../../errors.js';
import { hostCgroupHierarchies, type OciSpec } from './root-plan.js';

/** Where containerd's shims keep a running container's bundle, by engine layout. */
const BUNDLE_ROOTS = ['/run/docker/containerd/daemon/io.containerd.runtime.v2.task/moby', '/run/containerd/io.containerd.runtime.v2.task/moby'];

/** What a new container of an image is, as the engine made one (see root-plan.ts). */
export interface ReferenceCapture {
  spec: OciSpec;
  /** The image's layers as the engine's overlay lists them (its lowerdir without the init layer), top first. */
  imageLayers: string[];
  /** The container's init layer on the host. */
  initLayer: string;
  /** The idle process's id (the first child of its init). */
  idlePid: number;
  /** Its devices cgroup's rules as the kernel lists them. */
  devices: string[];
}

/**
 * Reads a running container's OCI spec, overlay and idle process id from the host (a local
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
  const children = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
  const hostIdle = Number(children.trim().split(/\s+/)[0]);
  const status = await readFile(`/proc/${hostIdle}/status`, 'utf8').catch(() => '');
  const idlePid = Number(/^NSpid:.*\s(\d+)\s*$/m.exec(status)?.[1]);
  if (!Number.isInteger(idlePid) || idlePid < 2) throw fail('its idle process was not found');
  const devicesRoot = hostCgroupHierarchies().find((h) => h.name === 'devices')?.hostPath;
  const cgroupsPath = (spec.linux as { cgroupsPath?: string }).cgroupsPath ?? `/docker/${info.Id}`;
  const devicesList = devicesRoot ? await readFile(join(devicesRoot, cgroupsPath, 'devices.list'), 'utf8').catch(() => undefined) : '';
  if (devicesList === undefined) throw fail(`cannot read its devices cgroup (${cgroupsPath})`);
  const devices = devicesList.split('\n').filter((line) => line.trim() !== '');
  return { spec, imageLayers: lowerdir.split(':').slice(1), initLayer, idlePid, devices };
}
