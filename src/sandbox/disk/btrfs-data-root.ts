import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { StorageError } from '../../errors.js';
import { hostMountPoints } from '../host-mounts.js';

const run = promisify(execFile);

/**
 * A btrfs file system in a file, loop-mounted, with quotas on: a data root on which a
 * Docker engine started with `--storage-driver=btrfs` enforces `--storage-opt size=`
 * (each container's writable layer is a subvolume with a qgroup limit). Made with
 * btrfs-progs' `mkfs.btrfs`, util-linux's `mount -o loop` and `btrfs quota enable`; needs root.
 */
export interface BtrfsDataRoot {
  /** The mounted file system: give it to dockerd as `--data-root` (or a folder under it). */
  readonly mountPoint: string;
  /** The file holding the file system (sparse: it takes only what is written in it). */
  readonly imageFile: string;
  /** The loop device it is mounted through. */
  readonly loopDevice: string;
  /** Unmounts it, frees the loop device and deletes the file and the folder. Idempotent. */
  remove(): Promise<void>;
}

export interface BtrfsDataRootOptions {
  /** Folder for the image file and the mount point (made if missing). */
  dir: string;
  /** The file system's size (default 32 GiB; the file is sparse). */
  sizeBytes?: number;
}

const sh = async (command: string, args: string[]): Promise<string> => {
  try {
    return (await run(command, args, { encoding: 'utf8' })).stdout;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim().split('\n').at(-1) ?? '';
    throw new StorageError(`${command} ${args.join(' ')} failed${stderr ? `: ${stderr}` : ''}`, { details: { command, args }, cause: error });
  }
};

/** Whether `path` is a mount point (listed in /proc/self/mountinfo). */
const mounted = (path: string): boolean => hostMountPoints().includes(path);

/**
 * Makes and mounts a btrfs data root in `dir` (`dir/btrfs.img` mounted at `dir/root`).
 * What is made is undone if a later step fails.
 * @throws StorageError naming the step that failed (no mkfs.btrfs, not root, no loop device…).
 */
export async function createBtrfsDataRoot(options: BtrfsDataRootOptions): Promise<BtrfsDataRoot> {
  if (process.getuid?.() !== 0) throw new StorageError('a btrfs data root needs root (mount, losetup)');
  const { imageFile, mountPoint } = btrfsDataRootPaths(options.dir);
  await mkdir(mountPoint, { recursive: true });
  const root: BtrfsDataRoot = { mountPoint, imageFile, loopDevice: '', remove: () => removeBtrfsDataRoot(options.dir) };
  try {
    await sh('truncate', ['-s', String(options.sizeBytes ?? 32 * 1024 ** 3), imageFile]);
    await sh('mkfs.btrfs', ['-q', imageFile]);
    return { ...root, loopDevice: await mountBtrfsDataRoot(options.dir) };
  } catch (error) {
    await root.remove().catch(() => undefined);
    throw error;
  }
}

/** Where a data root made in `dir` keeps its file and its mount. */
export function btrfsDataRootPaths(dir: string): { imageFile: string; mountPoint: string } {
  return { imageFile: join(dir, 'btrfs.img'), mountPoint: join(dir, 'root') };
}

/** Whether the data root of `dir` is mounted. */
export function btrfsDataRootMounted(dir: string): boolean {
  return mounted(btrfsDataRootPaths(dir).mountPoint);
}

/**
 * Mounts the file system of `dir` (made before, e.g. unmounted by a reboot) and turns its
 * quotas on. @returns the loop device. @throws StorageError naming the failing command.
 */
export async function mountBtrfsDataRoot(dir: string): Promise<string> {
  const { imageFile, mountPoint } = btrfsDataRootPaths(dir);
  await mkdir(mountPoint, { recursive: true });
  await sh('mount', ['-o', 'loop', imageFile, mountPoint]);
  await sh('btrfs', ['quota', 'enable', mountPoint]);
  return (await sh('losetup', ['-j', imageFile])).split(':')[0] ?? '';
}

/** Unmounts the data root of `dir`, frees its loop device and deletes its file and mount point. Idempotent. */
export async function removeBtrfsDataRoot(dir: string): Promise<void> {
  const { imageFile, mountPoint } = btrfsDataRootPaths(dir);
  if (mounted(mountPoint)) {
    await sh('umount', [mountPoint]).catch(() => sh('umount', ['-l', mountPoint]));
  }
  // `mount -o loop` sets autoclear; a device still attached (a lazy unmount) is detached here.
  for (const line of (await sh('losetup', ['-j', imageFile]).catch(() => '')).split('\n')) {
    const device = line.split(':')[0];
    if (device) await sh('losetup', ['-d', device]).catch(() => undefined);
  }
  await rm(imageFile, { force: true });
  await rm(mountPoint, { recursive: true, force: true });
}

/** Whether this host can make a btrfs data root, or why not. */
export function btrfsDataRootUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root';
  if (!['/sbin/mkfs.btrfs', '/usr/sbin/mkfs.btrfs', '/usr/bin/mkfs.btrfs', '/bin/mkfs.btrfs'].some(existsSync)) return 'no mkfs.btrfs (install btrfs-progs)';
  if (!readFileSync('/proc/filesystems', 'utf8').includes('btrfs')) {
    // The module may load on first mount; only a kernel without it fails then.
    return existsSync('/sys/module/btrfs') || existsSync(`/lib/modules`) ? undefined : 'the kernel has no btrfs';
  }
  return undefined;
}
