/**
 * `intercode doctor`'s disk-quota check against real engines: a dockerd of the test's own
 * whose data root is an xfs file system on a loop device — mounted with project quotas
 * (supported) and without (the fallback) — and its free-disk check measuring that small
 * file system. Needs root, mkfs.xfs (`xfsprogs`, installed by `setup --with-test-tools`),
 * loop devices and dockerd; everything is unmounted and removed afterwards.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { DoctorReport } from '../../src/doctor/index.js';
import { commandExists, probeHost, startDockerdStep, type DockerdLayout } from '../../src/setup/index.js';
import { IN_CI } from '../setup/docker.js';
import { mountPointsUnder } from '../../src/sandbox/host-mounts.js';
import { processesMentioning, secondDockerdUnavailable } from '../setup/second-dockerd.js';

const CLI = join(import.meta.dirname, '../../bin/intercode.js');
const unavailable = secondDockerdUnavailable() ?? (commandExists('mkfs.xfs') ? undefined : 'no mkfs.xfs (apt-get install xfsprogs)');

let dir: string | undefined;

/** Stops the test's dockerd (its pidfile) and waits for it to exit. */
async function stopDockerd(pidfile: string): Promise<void> {
  const pid = Number(existsSync(pidfile) ? readFileSync(pidfile, 'utf8') : NaN);
  if (!(pid > 0) || !existsSync(`/proc/${pid}`)) return;
  process.kill(pid, 'SIGTERM');
  for (let waited = 0; existsSync(`/proc/${pid}`) && waited < 30_000; waited += 200) await new Promise((r) => setTimeout(r, 200));
}

afterAll(async () => {
  if (!dir) return;
  await stopDockerd(join(dir, 'docker.pid'));
  for (const { pid } of processesMentioning(`${dir}/`)) process.kill(pid, 'SIGKILL');
  for (const mount of mountPointsUnder(dir)) spawnSync('umount', ['-l', mount]);
  // A loop device detaches itself once unmounted (autoclear), a moment later; detach what stays.
  const loops = () => spawnSync('losetup', ['-a'], { encoding: 'utf8' }).stdout.split('\n').filter((line) => line.includes(`${dir}/`));
  for (let waited = 0; loops().length > 0 && waited < 10_000; waited += 200) await new Promise((r) => setTimeout(r, 200));
  for (const line of loops()) spawnSync('losetup', ['-d', line.split(':')[0]!]);
  await rm(dir, { recursive: true, force: true });
  expect(mountPointsUnder(dir)).toEqual([]);
  expect(loops()).toEqual([]);
});

/** A loop file system of `type` under the test's folder, made once. */
function makeImage(type: 'xfs' | 'btrfs'): string {
  const image = join(dir!, `${type}.img`);
  expect(spawnSync('truncate', ['-s', '400M', image]).status).toBe(0);
  const made = spawnSync(type === 'xfs' ? 'mkfs.xfs' : 'mkfs.btrfs', ['-q', image], { encoding: 'utf8' });
  expect(made.status, made.stderr).toBe(0);
  return image;
}

/**
 * Mounts `image` with `options` as the data root of a dockerd of the test's own, runs
 * `intercode doctor --json` against it, then stops that engine and unmounts.
 * @returns undefined when the kernel refuses the mount (e.g. no XFS quota support).
 */
async function doctorOn(image: string, options: string): Promise<{ status: number | null; report: DoctorReport } | undefined> {
  const mnt = join(dir!, 'mnt');
  mkdirSync(mnt, { recursive: true });
  const layout: DockerdLayout = { socket: join(dir!, 'docker.sock'), configFile: join(dir!, 'daemon.json'), logFile: join(dir!, 'dockerd.log'), pidfile: join(dir!, 'docker.pid'), dataRoot: join(mnt, 'docker'), execRoot: join(dir!, 'exec') };
  if (spawnSync('mount', ['-o', `loop,${options}`, image, mnt]).status !== 0) return undefined;
  try {
    const facts = await probeHost({ defaultSocket: layout.socket, pidfile: layout.pidfile });
    await startDockerdStep(60_000).run({ facts, layout, log: () => undefined });
    const run = spawnSync(process.execPath, [CLI, 'doctor', '--json'], { encoding: 'utf8', env: { ...process.env, DOCKER_HOST: `unix://${layout.socket}` } });
    return { status: run.status, report: JSON.parse(run.stdout) as DoctorReport };
  } finally {
    await stopDockerd(layout.pidfile);
    for (const mount of mountPointsUnder(mnt)) spawnSync('umount', ['-l', mount]);
    spawnSync('umount', [mnt]);
  }
}

const check = (report: DoctorReport, id: string) => report.checks.find((c) => c.id === id)!;

describe.skipIf(!!unavailable && !IN_CI)('doctor on engines whose data root is xfs or btrfs', () => {
  it('xfs without project quotas: the watched limit, with its fix; free disk is that file system\'s', async () => {
    if (unavailable) throw new Error(unavailable);
    dir = await mkdtemp('/tmp/ic-quota-');
    const result = await doctorOn(makeImage('xfs'), 'noquota');
    expect(result, 'mounting an xfs loop device failed').toBeDefined();
    expect(check(result!.report, 'disk-quota')).toMatchObject({ status: 'warn', summary: expect.stringContaining('overlay2 on xfs without pquota: each sandbox\'s disk limit is watched'), fix: expect.stringContaining('btrfs storage driver') });
    expect(check(result!.report, 'free-disk')).toMatchObject({ status: 'fail', summary: expect.stringMatching(/^0\.\d GiB free on \/tmp\/ic-quota-\w+\/mnt\/docker: /) });
    expect(result!.status).toBe(1);
  });

  it('btrfs: the engine picks the btrfs driver and holds the limit', async () => {
    if (unavailable) throw new Error(unavailable);
    const result = await doctorOn(makeImage('btrfs'), 'defaults');
    expect(result, 'mounting a btrfs loop device failed').toBeDefined();
    expect(check(result!.report, 'disk-quota')).toMatchObject({ status: 'ok', summary: "storage driver btrfs: the engine holds each sandbox's disk limit" });
  });

  it('xfs with project quotas (where the kernel has XFS quota support): still watched, and doctor says why', async (context) => {
    if (unavailable) throw new Error(unavailable);
    const result = await doctorOn(join(dir!, 'xfs.img'), 'pquota');
    if (!result) return context.skip('this kernel refuses -o pquota on xfs (no XFS quota support)');
    expect(check(result.report, 'disk-quota')).toMatchObject({ status: 'warn', summary: expect.stringContaining('overlay2 on xfs with project quotas (Docker could hold a size there, but sandboxes ask for one only on btrfs or zfs)') });
  });
});
