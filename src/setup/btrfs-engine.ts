import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { SetupError, StorageError } from '../errors.js';
import { processAlive } from '../sandbox/lifecycle/process-alive.js';
import { mountPointsUnder } from '../sandbox/host-mounts.js';
import { btrfsDataRootMounted, btrfsDataRootPaths, createBtrfsDataRoot, mountBtrfsDataRoot, removeBtrfsDataRoot } from '../sandbox/disk/btrfs-data-root.js';
import type { DockerdLayout, SetupStep, StepOutcome } from './step.js';

/** Where `setup --btrfs-engine` puts everything of that engine unless `--btrfs-dir` says otherwise. */
export const DEFAULT_BTRFS_ENGINE_DIR = '/var/lib/intercode-ts/btrfs-engine';

/**
 * A second Docker engine whose data root is a loop-mounted btrfs with quotas on: there each
 * sandbox's disk limit is held by the engine (`--storage-opt size=`, a qgroup), not watched.
 * Everything it has lives under `dir`: the file system's file and mount (`btrfs.img`,
 * `root/`), and the engine's socket, pidfile, exec root, config and log, so that removing
 * it is removing one folder.
 */
export function btrfsEngineLayout(dir: string): DockerdLayout {
  return {
    socket: join(dir, 'docker.sock'),
    configFile: join(dir, 'daemon.json'),
    logFile: join(dir, 'dockerd.log'),
    pidfile: join(dir, 'docker.pid'),
    dataRoot: join(btrfsDataRootPaths(dir).mountPoint, 'docker'),
    execRoot: join(dir, 'exec'),
    storageDriver: 'btrfs',
  };
}

/** The step that makes (or mounts again, after a reboot) the engine's btrfs file system. */
export function btrfsDataRootStep(dir: string, sizeBytes: number): SetupStep {
  return {
    id: 'btrfs-data-root',
    title: `make a ${Math.round(sizeBytes / 1024 ** 3)} GiB btrfs file system (sparse file, loop device, quotas on) for the engine's data`,
    async run(): Promise<StepOutcome> {
      const { imageFile, mountPoint } = btrfsDataRootPaths(dir);
      try {
        if (btrfsDataRootMounted(dir)) return { status: 'skipped', detail: `${mountPoint} is mounted already` };
        if (existsSync(imageFile)) {
          await mountBtrfsDataRoot(dir);
          return { status: 'done', detail: `mounted the existing ${imageFile} at ${mountPoint}` };
        }
        await createBtrfsDataRoot({ dir, sizeBytes });
        return { status: 'done', detail: `${imageFile} mounted at ${mountPoint}` };
      } catch (error) {
        if (!(error instanceof StorageError)) throw error;
        throw new SetupError('btrfs-data-root', error.message, ['apt-get install -y btrfs-progs   # if mkfs.btrfs is missing'], error);
      }
    },
  };
}

/**
 * Stops the btrfs engine of `dir` (SIGTERM, then SIGKILL after 30 s), unmounts what it left
 * under `dir`, removes its file system and deletes `dir`. Idempotent.
 * @returns what was done, one line each.
 */
export async function removeBtrfsEngine(dir: string): Promise<string[]> {
  const done: string[] = [];
  const layout = btrfsEngineLayout(dir);
  const pid = Number(existsSync(layout.pidfile) ? readFileSync(layout.pidfile, 'utf8').trim() : NaN);
  if (Number.isInteger(pid) && pid > 0 && processAlive(pid)) {
    process.kill(pid, 'SIGTERM');
    for (let waited = 0; processAlive(pid) && waited < 30_000; waited += 200) await new Promise((resolve) => setTimeout(resolve, 200));
    if (processAlive(pid)) process.kill(pid, 'SIGKILL');
    done.push(`stopped dockerd (pid ${pid})`);
  }
  // What the engine may have left mounted under its exec root (network namespaces, say), deepest first.
  const mounts = mountPointsUnder(layout.execRoot!);
  for (const mount of mounts) execFileSync('umount', ['-l', mount]);
  if (mounts.length > 0) done.push(`unmounted ${mounts.length} mount(s) under ${layout.execRoot}`);
  const { imageFile } = btrfsDataRootPaths(dir);
  if (existsSync(imageFile) || btrfsDataRootMounted(dir)) {
    await removeBtrfsDataRoot(dir);
    done.push(`removed the btrfs file system ${imageFile}`);
  }
  if (existsSync(dir)) {
    await rm(dir, { recursive: true, force: true });
    done.push(`deleted ${dir}`);
  }
  return done;
}
