import { constants, type BigIntStats } from 'node:fs';
import { access, lstat, open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { FileSystemChange } from '../types.js';

/** Where an overlay2 container's layers are on the engine's host. */
export interface LayerPaths {
  /** The container's own writable layer: every path it changed is here. */
  upper: string;
  /** The container's root as its processes see it. */
  merged: string;
}

/** @returns the layer paths when the engine uses overlay2 and this process can read them (a local engine, run as root). */
export async function readableLayers(graphDriver: { Name?: string; Data?: Record<string, string> } | undefined): Promise<LayerPaths | undefined> {
  const upper = graphDriver?.Data?.UpperDir;
  const merged = graphDriver?.Data?.MergedDir;
  if (graphDriver?.Name !== 'overlay2' || !upper || !merged) return undefined;
  try {
    await access(upper, constants.R_OK);
    await access(merged, constants.R_OK);
    return { upper, merged };
  } catch {
    return undefined;
  }
}

const stat = (path: string) => lstat(path, { bigint: true }).catch(() => undefined);
const isWhiteout = (s: BigIntStats) => s.isCharacterDevice() && s.rdev === 0n;
const seconds = (s: BigIntStats) => s.mtimeNs / 1_000_000_000n;

/** Same type, mode, owner, size and mtime to the second (what a tar header carries). */
function sameMetadata(a: BigIntStats, b: BigIntStats): boolean {
  return a.mode === b.mode && a.uid === b.uid && a.gid === b.gid && seconds(a) === seconds(b) && (a.isDirectory() || a.size === b.size);
}

async function sameContent(a: string, b: string, size: bigint): Promise<boolean> {
  if (size > 64n * 1024n * 1024n) return false;
  const read = async (path: string) => {
    const file = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      return await file.readFile();
    } finally {
      await file.close();
    }
  };
  return (await read(a)).equals(await read(b));
}

async function requireMounted(...layers: LayerPaths[]): Promise<void> {
  for (const { merged } of layers) {
    if ((await readdir(merged).catch(() => [])).length === 0) throw new Error(`${merged} is not mounted: the container is not running`);
  }
}

/**
 * Every path where `sandbox` differs from `reference` (an untouched container of the same
 * image), found on the host without asking the engine: only the paths in the sandbox's
 * writable layer can differ, and each is compared with the reference's view (type, mode,
 * owner, size, mtime to the second, content); for a directory, reference entries missing
 * from it are reported deleted (this covers both whiteouts and directories made opaque).
 * Read-only: nothing is followed through a symbolic link.
 * @param skip paths that are mounts, not the image's files.
 */
export async function diffAgainstReference(sandbox: LayerPaths, reference: LayerPaths, skip: (path: string) => boolean): Promise<FileSystemChange[]> {
  const changes: FileSystemChange[] = [];
  async function visit(path: string): Promise<void> {
    if (skip(path)) return;
    const mine = await stat(join(sandbox.upper, path));
    if (!mine) return;
    const theirs = await stat(join(reference.merged, path));
    if (isWhiteout(mine)) {
      if (theirs) changes.push({ path, kind: 'deleted' });
      return;
    }
    if (!theirs) {
      changes.push({ path, kind: 'added' });
      return;
    }
    const sameType = (mine.mode & 0o170000n) === (theirs.mode & 0o170000n);
    if (!sameType || !sameMetadata(mine, theirs)) changes.push({ path, kind: 'modified' });
    else if (mine.isFile() && !(await sameContent(join(sandbox.upper, path), join(reference.merged, path), mine.size))) changes.push({ path, kind: 'modified' });
    if (!sameType || !mine.isDirectory()) return;
    const present = new Set(await readdir(join(sandbox.merged, path)));
    for (const name of await readdir(join(reference.merged, path))) {
      if (!present.has(name) && !skip(join(path, name))) changes.push({ path: join(path, name), kind: 'deleted' });
    }
    for (const name of await readdir(join(sandbox.upper, path))) await visit(join(path, name));
  }
  // A stopped container's root is unmounted: every path would look added. Checked before
  // and after the walk, so a container killed meanwhile fails the diff instead of skewing it.
  await requireMounted(sandbox, reference);
  for (const name of await readdir(sandbox.upper)) await visit(`/${name}`);
  await requireMounted(sandbox, reference);
  const seen = new Set<string>();
  return changes.filter((c) => !seen.has(c.path) && seen.add(c.path));
}
