/**
 * `intercode setup --btrfs-engine GiB`: a second, real dockerd whose data root is a
 * loop-mounted btrfs (the engine then holds each sandbox's disk limit), everything under
 * one folder; run again it finds it answering; `--remove-btrfs-engine` stops it and leaves
 * no process, mount or file behind. Needs root, dockerd and mkfs.btrfs: under CI=true it
 * runs and fails loudly without them.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { btrfsDataRootUnavailable } from '../../src/sandbox/disk/btrfs-data-root.js';
import { connectEngine } from '../../src/sandbox/docker/engine.js';
import { mountPointsUnder } from '../../src/sandbox/host-mounts.js';
import { processAlive } from '../../src/sandbox/lifecycle/process-alive.js';
import { IN_CI } from '../setup/docker.js';
import { intercodeFromSource } from '../setup/cli.js';
import { secondDockerdUnavailable } from '../setup/second-dockerd.js';

const unavailable = secondDockerdUnavailable() ?? btrfsDataRootUnavailable();
if (unavailable && !IN_CI) console.warn(`skipping the btrfs engine set-up test: ${unavailable}`);


describe.skipIf(!!unavailable && !IN_CI)('setup --btrfs-engine', () => {
  let dir: string | undefined;
  afterAll(async () => {
    if (!dir) return;
    await intercodeFromSource(['setup', '--remove-btrfs-engine', '--btrfs-dir', dir]);
    await rm(dir, { recursive: true, force: true });
  });

  it('rejects a size that is not a whole number of GiB, naming the flag', async () => {
    const run = await intercodeFromSource(['setup', '--btrfs-engine', '0.5', '--btrfs-dir', '/tmp/ic-never-made']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--btrfs-engine must be a whole number of GiB, at least 1, got "0.5"');
    expect(existsSync('/tmp/ic-never-made')).toBe(false);
  });

  it('makes a btrfs engine under one folder, finds it answering the second time, and removes every trace of it', async () => {
    if (unavailable) throw new Error(`this test needs ${unavailable}`);
    dir = await mkdtemp('/tmp/ic-btrfs-');
    const first = await intercodeFromSource(['setup', '--btrfs-engine', '2', '--btrfs-dir', dir, '--no-images', '--json']);
    expect(first.code, first.stderr).toBe(0);
    const made = JSON.parse(first.stdout) as { ok: boolean; situation: string; endpoint: string; steps: { id: string; status: string }[] };
    expect(made).toMatchObject({ ok: true, situation: 'install-and-start', endpoint: `unix://${dir}/docker.sock` });
    expect(made.steps.find((s) => s.id === 'btrfs-data-root')).toMatchObject({ status: 'done' });
    expect(made.steps.find((s) => s.id === 'start-dockerd')).toMatchObject({ status: 'done' });

    const info = (await (await connectEngine(made.endpoint)).info()) as { Driver: string; DockerRootDir: string };
    expect(info).toMatchObject({ Driver: 'btrfs', DockerRootDir: `${dir}/root/docker` });
    vi.stubEnv('DOCKER_HOST', made.endpoint);
    const doctor = await intercodeFromSource(['doctor', '--json']).finally(() => vi.unstubAllEnvs());
    const quota = (JSON.parse(doctor.stdout) as { checks: { id: string; status: string }[] }).checks.find((c) => c.id === 'disk-quota');
    expect(quota).toMatchObject({ status: 'ok' });

    const again = await intercodeFromSource(['setup', '--btrfs-engine', '2', '--btrfs-dir', dir, '--no-images', '--json']);
    expect(JSON.parse(again.stdout)).toMatchObject({ ok: true, situation: 'engine-answers' });

    const pid = Number(readFileSync(`${dir}/docker.pid`, 'utf8'));
    const removed = await intercodeFromSource(['setup', '--remove-btrfs-engine', '--btrfs-dir', dir, '--json']);
    expect(removed.code, removed.stderr).toBe(0);
    expect((JSON.parse(removed.stdout) as { removed: string[] }).removed).toEqual(
      expect.arrayContaining([`stopped dockerd (pid ${pid})`, `removed the btrfs file system ${dir}/btrfs.img`, `deleted ${dir}`]),
    );
    expect(processAlive(pid)).toBe(false);
    expect(mountPointsUnder(dir)).toEqual([]);
    expect(existsSync(dir)).toBe(false);
  }, 180_000);
});
