import { execFile } from 'node:child_process';
import { chmodSync, chownSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { LayerArchive, LayerLimits } from '../types.js';
import { LayerArchiveRefusal } from '../carry-refusal.js';

const run = promisify(execFile);

/**
 * Sizes the layer at `upper` (a host directory) before anything is copied: its paths and the
 * bytes of its regular files (hard links counted once), a socket refused (tar cannot
 * archive one: it would be left out, a partial copy). Stops at the first limit passed.
 */
function measure(upper: string, limits: LayerLimits): { paths: number; bytes: number; grownFolders: { path: string; size: number }[] } {
  let paths = 0;
  let bytes = 0;
  const grownFolders: { path: string; size: number }[] = [];
  const seen = new Set<string>();
  const pending = [''];
  while (pending.length > 0) {
    const path = pending.pop()!;
    for (const name of readdirSync(join(upper, path))) {
      const entry = join(path, name);
      const stat = lstatSync(join(upper, entry));
      if (++paths > limits.maxPaths) throw new LayerArchiveRefusal('too-many-paths', `the sandbox's written files hold more than ${limits.maxPaths} paths`, { maxPaths: limits.maxPaths });
      if (stat.isSocket()) throw new LayerArchiveRefusal('socket', `/${entry} is a socket: a checkpoint cannot carry it`, { path: `/${entry}` });
      if (stat.isDirectory()) {
        pending.push(entry);
        if (stat.size > FOLDER_BLOCK) grownFolders.push({ path: entry, size: stat.size });
      }
      else if (stat.isFile() && (stat.nlink === 1 || !seen.has(`${stat.ino}`))) {
        if (stat.nlink > 1) seen.add(`${stat.ino}`);
        bytes += stat.size;
        if (bytes > limits.maxBytes) throw new LayerArchiveRefusal('too-large', `the sandbox's written files hold more than ${limits.maxBytes} bytes`, { maxBytes: limits.maxBytes });
      }
    }
  }
  return { paths, bytes, grownFolders };
}

/** A new folder's size on ext4 (one block); one that held more entries keeps the blocks it grew to. */
const FOLDER_BLOCK = 4096;

/**
 * Makes each of `folders` (paths under `upper`) as large as it was in the archived layer: a
 * folder that once held many entries keeps the blocks it grew to (ext4 never shrinks one),
 * which `du`, `ls -s` and `find -size` show. Entries with long names are made and removed
 * until it has grown as much; `tar` then gives the folder its archived mode, owner and times.
 */
function growFolders(upper: string, folders: readonly { path: string; size: number }[]): void {
  const filler = 'x'.repeat(200);
  for (const { path, size } of folders) {
    const dir = join(upper, path);
    mkdirSync(dir, { recursive: true });
    const made: string[] = [];
    for (let i = 0; statSync(dir).size < size && i < 1_000_000; i++) {
      const name = join(dir, `.${i}${filler}`);
      writeFileSync(name, '');
      made.push(name);
    }
    for (const name of made) unlinkSync(name);
  }
}

/**
 * Archives the container's writable layer at `upper` (a host directory; the container must
 * not write meanwhile: the caller pauses it) into `archivePath`: every path as the layer
 * holds it — contents, types, modes, owners, hard links, symbolic links, FIFOs, device
 * nodes, overlayfs whiteouts and opaque folders, extended attributes (`trusted.overlay.*`
 * included), and atimes and mtimes to the nanosecond (POSIX tar). Files are read with
 * O_NOATIME (`--atime-preserve=system`): the archive does not move the layer's atimes.
 * @throws LayerArchiveRefusal when the layer holds a socket or more than `limits`.
 */
export async function archiveLayer(upper: string, archivePath: string, limits: LayerLimits): Promise<LayerArchive> {
  const { paths, bytes, grownFolders } = measure(upper, limits);
  try {
    await run('tar', ['--format=posix', '--xattrs', '--xattrs-include=*', '--atime-preserve=system', '--numeric-owner', '--sparse', '-C', upper, '-cf', archivePath, '.'], { timeout: limits.timeoutMs, maxBuffer: 1024 * 1024 });
  } catch (error) {
    if ((error as { killed?: boolean }).killed) throw new LayerArchiveRefusal('timed-out', `archiving the sandbox's written files took more than ${limits.timeoutMs} ms`, { timeoutMs: limits.timeoutMs });
    throw error;
  }
  return { path: archivePath, paths, bytes, archiveBytes: statSync(archivePath).size, grownFolders };
}

/**
 * Extracts `archive` into `upper`, the writable layer of a container that was created and
 * not yet started (overlayfs then mounts it as if the container had written it): the
 * container starts with every path as the archived layer held it, atimes included (`-G`
 * makes GNU tar set them; only ctimes and inode numbers are the extraction's).
 */
export async function extractLayer(archive: LayerArchive, upper: string): Promise<void> {
  growFolders(upper, archive.grownFolders ?? []);
  await run('tar', ['-G', '-x', '--xattrs', '--xattrs-include=*', '-p', '--same-owner', '--numeric-owner', '-C', upper, '-f', archive.path], { maxBuffer: 1024 * 1024 });
}

/** What {@link archiveContainerLayer} needs of a container: pausing it. */
interface Pausable {
  pause(): Promise<unknown>;
  unpause(): Promise<unknown>;
}

/**
 * {@link archiveLayer} of a running container, frozen meanwhile (cgroup freezer: no process
 * of it writes while the layer is read), with the /etc files the engine mounts for it
 * (`etcFiles`: path in the container → host file).
 */
export async function archiveContainerLayer(container: Pausable, upper: string, etcFiles: ReadonlyMap<string, string>, archivePath: string, limits: LayerLimits): Promise<LayerArchive> {
  await pauseRetrying(container);
  try {
    const archive = await archiveLayer(upper, archivePath, limits);
    const mountedFiles = [...etcFiles].map(([path, host]) => {
      const { mode, uid, gid } = statSync(host);
      return { path, content: readFileSync(host), mode: mode & 0o7777, uid, gid };
    });
    return { ...archive, mountedFiles };
  } finally {
    await container.unpause();
  }
}

/**
 * Pauses `container`, again up to twice when the freezer does not settle in runc's time
 * (processes in uninterruptible sleep: seen here under heavy disk load, "unable to freeze").
 * A retry that finds the container paused already is done: the attempt reported as failed
 * froze it after all (seen here at load average 40: the next pause answered HTTP 409 "is
 * already paused").
 */
export async function pauseRetrying(container: Pausable): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await container.pause();
      return;
    } catch (error) {
      const message = String((error as Error).message);
      if (attempt > 1 && /is already paused/.test(message)) return;
      if (attempt >= 3 || !/unable to freeze/.test(message)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
    }
  }
}

/** Gives the host files the engine mounted at /etc in a new container (`hostFileOf`) the content, mode and owner `archive` recorded. */
export async function restoreMountedFiles(archive: LayerArchive, hostFileOf: (path: string) => Promise<string | undefined>): Promise<void> {
  for (const file of archive.mountedFiles ?? []) {
    const host = await hostFileOf(file.path);
    if (!host) throw new Error(`the new sandbox's ${file.path} cannot be written from this host`);
    writeFileSync(host, file.content);
    chmodSync(host, file.mode);
    chownSync(host, file.uid, file.gid);
  }
}

/** The writable layer of a container created and not started, on this host. @throws Error when the engine's storage is not overlay2 or the folder cannot be reached. */
export async function createdUpperDir(container: { inspect(): Promise<{ GraphDriver?: { Name?: string; Data?: Record<string, string> | null } }> }): Promise<string> {
  const { GraphDriver } = await container.inspect();
  const upper = GraphDriver?.Name === 'overlay2' ? GraphDriver.Data?.UpperDir : undefined;
  if (!upper || !statSync(upper, { throwIfNoEntry: false })?.isDirectory()) throw new Error('the new container has no writable layer this host can reach (overlay2, a local engine, run as root)');
  return upper;
}
