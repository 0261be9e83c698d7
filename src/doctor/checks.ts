import type Docker from 'dockerode';
import { existsSync, readFileSync, statfsSync } from 'node:fs';
import { findImage, missingImages } from '../images/image-builder.js';
import type { ImageRecipe } from '../images/recipe.js';
import type { HostFacts } from '../setup/host-facts.js';
import type { HealthCheck } from '../sandbox/health.js';
import { engineHoldsDiskLimit } from '../sandbox/docker/container-creation.js';
import { unescapeMountPath } from '../sandbox/host-mounts.js';
import { episodeRootsUnsupported } from '../sandbox/roots/root-runtime.js';

/** One line of the report: `fail` makes the machine unhealthy, `warn` works with a limitation. */
export type CheckResult = HealthCheck;

/** The engine's `docker info`, the part the checks read. */
export interface EngineInfo {
  ServerVersion?: string;
  Driver?: string;
  DriverStatus?: [string, string][];
  CgroupVersion?: string;
  CgroupDriver?: string;
  Runtimes?: Record<string, unknown>;
  DefaultRuntime?: string;
  DockerRootDir?: string;
}

export function engineCheck(facts: HostFacts): CheckResult {
  if (facts.engine.answers) return { id: 'engine', status: 'ok', summary: `Docker ${facts.engine.serverVersion} answers at ${facts.endpoint}` };
  return { id: 'engine', status: 'fail', summary: `no engine answers at ${facts.endpoint} (${facts.engine.message})`, fix: 'npx intercode setup   (it prints the commands for this machine when it cannot start one itself)' };
}

export function cgroupCheck(info: EngineInfo): CheckResult {
  const version = info.CgroupVersion ?? (existsSync('/sys/fs/cgroup/cgroup.controllers') ? '2' : '1');
  const driver = info.CgroupDriver ?? 'unknown';
  if (driver === 'none') return { id: 'cgroup', status: 'fail', summary: `cgroup v${version}, driver none: the engine cannot limit memory, pids or CPU`, fix: 'run a rootful dockerd (rootless on cgroup v1 has no limits)' };
  return { id: 'cgroup', status: 'ok', summary: `cgroup v${version} (driver ${driver}): memory, pids and CPU limits apply; OOM kills and pid counts are read from v1 or v2 files` };
}

export function runtimesCheck(info: EngineInfo): CheckResult {
  const names = Object.keys(info.Runtimes ?? {});
  const runc = names.includes('runc');
  const runsc = names.includes('runsc');
  const listed = `runtimes: ${names.join(', ') || 'none'} (default ${info.DefaultRuntime ?? '?'})`;
  if (!runc) return { id: 'runtimes', status: 'fail', summary: `${listed}; runc is missing`, fix: 'apt-get install -y runc (or docker.io), then restart dockerd' };
  const runscPath = (info.Runtimes?.runsc as { path?: string } | undefined)?.path;
  if (runsc && runscPath?.startsWith('/') && !existsSync(runscPath)) {
    return { id: 'runtimes', status: 'warn', summary: `${listed}; runsc is registered at ${runscPath} but that file does not exist`, fix: 'apt-get install -y runsc' };
  }
  if (!runsc) {
    return {
      id: 'runtimes',
      status: 'warn',
      summary: `${listed}; gVisor (runsc) is not registered: sandboxes run on runc only`,
      fix: 'apt-get install -y runsc; add "runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}} to /etc/docker/daemon.json; restart dockerd',
    };
  }
  return { id: 'runtimes', status: 'ok', summary: listed };
}

/**
 * Whether episode roots work with this engine (docs/design/episode-roots.md), and so what the
 * commands' default (`--sandbox-kind auto`) makes here: a warning when not, since every
 * command then runs on containers, at a new container's cost per used sandbox.
 */
export async function episodeRootsCheck(docker: Docker): Promise<CheckResult> {
  const why = await episodeRootsUnsupported(docker, {});
  if (why === undefined) return { id: 'episode-roots', status: 'ok', summary: 'episode roots are supported here, and the default (--sandbox-kind auto): a fresh root per sandbox in a few milliseconds' };
  return { id: 'episode-roots', status: 'warn', summary: `episode roots are not supported here: ${why}; sandboxes are containers (--sandbox-kind auto falls back to them)`, fix: 'a local rootful engine with runc, overlay2 and cgroup v1, run as root, with gcc and libseccomp-dev (npx intercode setup installs them)' };
}

/** The mount (point, type, options) a path lives on, from /proc/self/mounts. */
export function mountOf(path: string, mounts = readFileSync('/proc/self/mounts', 'utf8')): { point: string; type: string; options: string[] } | undefined {
  let best: { point: string; type: string; options: string[] } | undefined;
  for (const line of mounts.split('\n')) {
    const [, point, type, options] = line.split(' ');
    if (!point || !type) continue;
    const decoded = unescapeMountPath(point);
    if ((path === decoded || path.startsWith(decoded.endsWith('/') ? decoded : `${decoded}/`)) && (!best || decoded.length >= best.point.length)) {
      best = { point: decoded, type, options: (options ?? '').split(',') };
    }
  }
  return best;
}

/**
 * How sandboxes on this engine will hold their disk limit (what DockerRuntime does, see
 * docs/security.md#disk): the engine holds it on btrfs or zfs; on overlay2 it is watched
 * (file-size rlimit and checks of the layer, which many fast writes overshoot for a moment).
 */
export function diskQuotaCheck(info: EngineInfo, mounts?: string): CheckResult {
  const driver = info.Driver ?? 'unknown';
  const backing = info.DriverStatus?.find(([key]) => key === 'Backing Filesystem')?.[1];
  if (engineHoldsDiskLimit(driver)) return { id: 'disk-quota', status: 'ok', summary: `storage driver ${driver}: the engine holds each sandbox's disk limit` };
  const fix = "for a limit the engine holds, put Docker's data root on btrfs with the btrfs storage driver (docs/security.md#disk)";
  if (driver === 'overlay2') {
    const mount = backing === 'xfs' && info.DockerRootDir ? mountOf(info.DockerRootDir, mounts) : undefined;
    const pquota = mount?.options.some((o) => o === 'pquota' || o === 'prjquota' || o === 'pqnoenforce');
    const xfs = backing !== 'xfs' ? '' : pquota ? ' with project quotas (Docker could hold a size there, but sandboxes ask for one only on btrfs or zfs)' : ' without pquota';
    return {
      id: 'disk-quota',
      status: 'warn',
      summary: `storage overlay2 on ${backing ?? 'an unknown filesystem'}${xfs}: each sandbox's disk limit is watched, not held by the engine — no file can outgrow it, but many fast writes overshoot it before the command is killed`,
      fix,
    };
  }
  return {
    id: 'disk-quota',
    status: 'warn',
    summary: `storage ${driver} on ${backing ?? 'an unknown filesystem'}: only a file-size limit bounds a sandbox's disk — many files can fill the engine's disk`,
    fix,
  };
}

/** An image the images check looks for (an env's, as `images build` lists them). */
export interface CheckedImage {
  name: string;
  usedBy: string;
  /** Built by `setup` and `images build`: missing, it warns; otherwise it is only reported. */
  byDefault: boolean;
  recipe(): Promise<ImageRecipe>;
}

/**
 * Every env image: built (with its tag), or what is missing and about how long its first
 * build takes. A missing default image warns (the first run builds it, and looks hung); a
 * missing optional one is only named; `perTask` says which envs make theirs per task.
 */
export async function imagesCheck(docker: Docker, images: readonly CheckedImage[], perTask: readonly string[] = []): Promise<CheckResult> {
  const missing: string[] = [];
  const optional: string[] = [];
  const present: string[] = [];
  for (const image of images) {
    const recipe = await image.recipe();
    const found = await findImage(docker, recipe);
    if (found.present) {
      present.push(`${image.name} ${found.tag}`);
      continue;
    }
    const plan = await missingImages(docker, recipe);
    const seconds = plan.reduce((sum, m) => sum + (m.typicalSeconds ?? 0), 0);
    const took = plan.every((m) => m.typicalSeconds) ? `, about ${Math.max(1, Math.round(seconds / 10) * 10)} s to build` : '';
    (image.byDefault ? missing : optional).push(`${image.name} (needs ${found.missing}${took}; for ${image.usedBy})`);
  }
  const notes = [
    ...(optional.length > 0 ? [`optional, not built: ${optional.join(', ')}`] : []),
    ...(perTask.length > 0 ? [`per task, built on first use: ${perTask.join('; ')}`] : []),
  ].map((note) => `; ${note}`).join('');
  const built = present.length > 0 ? `built: ${present.join(', ')}` : 'none built';
  if (missing.length === 0) return { id: 'images', status: 'ok', summary: `${built}${notes}` };
  return {
    id: 'images',
    status: 'warn',
    summary: `not built: ${missing.join(', ')} — a command builds its image on first use, which makes that first run slow; ${built}${notes}`,
    fix: `npx intercode images build   (or: images build --env ${missing.map((m) => m.split(' ')[0]).join(' --env ')})`,
  };
}

const GiB = 1024 ** 3;

/** Free space where the engine keeps images and sandboxes (or `/` when the engine is not local). */
export function freeDiskCheck(path: string, warnBelowGiB = 20, failBelowGiB = 5): CheckResult {
  const where = existsSync(path) ? path : '/';
  const stats = statfsSync(where);
  const free = (stats.bavail * stats.bsize) / GiB;
  const summary = `${free.toFixed(1)} GiB free on ${where}`;
  if (free < failBelowGiB) return { id: 'free-disk', status: 'fail', summary: `${summary}: the images alone take ~3 GiB`, fix: `free space on ${where} (npx intercode cleanup --dead-only; docker image prune)` };
  if (free < warnBelowGiB) return { id: 'free-disk', status: 'warn', summary: `${summary}: enough for the images, tight for large runs`, fix: `free space on ${where}` };
  return { id: 'free-disk', status: 'ok', summary };
}
