import { closeSync, constants, lstatSync, openSync, readdirSync, readFileSync, readSync, type Stats } from 'node:fs';
import { access } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { FileSystemChange } from '../types.js';

/** Where an overlay2 container's layers are on the engine's host. */
export interface LayerPaths {
  /** The container's own writable layer: every path it changed is here. */
  upper: string;
  /** The container's root as its processes see it. */
  merged: string;
  /**
   * Whether the layer is still the live sandbox's, where its mount cannot tell (an episode
   * root's overlay is mounted in its pool container, not on the host). Without it: `merged`
   * must be a mount point (a container's root is while the container runs).
   */
  live?: () => boolean;
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

/** lstat that answers undefined for a path that is not there. */
function stat(path: string): Stats | undefined {
  return lstatSync(path, { throwIfNoEntry: false });
}
const isWhiteout = (s: Stats) => s.isCharacterDevice() && s.rdev === 0;
const seconds = (s: Stats) => Math.floor(s.mtimeMs / 1000);

/** Same type, mode, owner, size and mtime to the second (what a tar header carries). */
function sameMetadata(a: Stats, b: Stats): boolean {
  return a.mode === b.mode && a.uid === b.uid && a.gid === b.gid && seconds(a) === seconds(b) && (a.isDirectory() || a.size === b.size);
}

const CHUNK = 64 * 1024;

/** Byte-wise equality of the file at `path` (none followed through a link) with `expected`. */
function hasContent(path: string, expected: Buffer): boolean {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const buf = Buffer.allocUnsafe(expected.length + 1);
    let n = 0;
    for (let read = 1; read > 0 && n < buf.length; n += read) read = readSync(fd, buf, n, buf.length - n, null);
    return n === expected.length && buf.subarray(0, n).equals(expected);
  } finally {
    closeSync(fd);
  }
}

/** Byte-wise equality of two files of `size` bytes, a chunk at a time (none followed through a link). */
function sameContent(a: string, b: string, size: number): boolean {
  if (size > 64 * 1024 * 1024) return false;
  const fa = openSync(a, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const fb = openSync(b, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      const bufA = Buffer.allocUnsafe(CHUNK);
      const bufB = Buffer.allocUnsafe(CHUNK);
      for (;;) {
        const n = readSync(fa, bufA, 0, CHUNK, null);
        const m = readSync(fb, bufB, 0, CHUNK, null);
        if (n !== m || !bufA.subarray(0, n).equals(bufB.subarray(0, m))) return false;
        if (n === 0) return true;
      }
    } finally {
      closeSync(fb);
    }
  } finally {
    closeSync(fa);
  }
}

/** A container's root is mounted while the container runs: then it is on another device than its parent. */
function requireMounted({ merged, live }: LayerPaths): void {
  if (live) {
    if (!live()) throw new Error(`${merged}: the sandbox is gone`);
    return;
  }
  const root = stat(merged);
  const parent = stat(dirname(merged));
  if (!root || !parent || root.dev === parent.dev) throw new Error(`${merged} is not mounted: the container is not running`);
}

/** Files of a reference kept in memory up to this size each, and this much in all. */
const CACHED_FILE_BYTES = 256 * 1024;
const CACHED_BYTES = 16 * 1024 * 1024;

/**
 * What has been read of a reference container, by path: its lstat, directory listings and
 * small files' content. A reference is never changed, so what was read once stands, and an
 * episode's diff reads only its own layer's side (through an overlay, a lookup or a listing
 * merges every layer's). What it reads
 * anew is kept only when the reference's root is still mounted after the read (a stopped
 * container's root shows nothing), so a diff that reads nothing of the reference needs no
 * look at its mount either. Only what the reference has is kept (a path it lacks is looked
 * up each time): the reference's own tree bounds the view, whatever names episodes make.
 */
export class ReferenceView {
  private readonly stats = new Map<string, Stats>();
  private readonly listings = new Map<string, string[]>();
  private readonly contents = new Map<string, Buffer>();
  private cachedBytes = 0;

  constructor(private readonly reference: LayerPaths) {}

  /** `read()`, then a check that the reference was mounted while it ran (its error, when not, is that). */
  private read<T>(read: () => T): T {
    let value: T;
    try {
      value = read();
    } catch (error) {
      requireMounted(this.reference);
      throw error;
    }
    requireMounted(this.reference);
    return value;
  }

  /** How many paths' lstat the view keeps. */
  get keptPaths(): number {
    return this.stats.size;
  }

  stat(path: string): Stats | undefined {
    const kept = this.stats.get(path);
    if (kept) return kept;
    const found = this.read(() => stat(join(this.reference.merged, path)));
    if (found) this.stats.set(path, found);
    return found;
  }

  listing(path: string): string[] {
    let names = this.listings.get(path);
    if (!names) this.listings.set(path, (names = this.read(() => readdirSync(join(this.reference.merged, path)))));
    return names;
  }

  /** Whether `file` (a sandbox's, of `size` bytes) has the content of the reference's `path`. */
  sameContentAs(file: string, path: string, size: number): boolean {
    let content = this.contents.get(path);
    if (!content && size <= CACHED_FILE_BYTES && this.cachedBytes + size <= CACHED_BYTES) {
      content = this.read(() => {
        const fd = openSync(join(this.reference.merged, path), constants.O_RDONLY | constants.O_NOFOLLOW);
        try {
          return readFileSync(fd);
        } finally {
          closeSync(fd);
        }
      });
      this.contents.set(path, content);
      this.cachedBytes += content.length;
    }
    return content ? hasContent(file, content) : this.read(() => sameContent(file, join(this.reference.merged, path), size));
  }
}

const referenceViews = new WeakMap<LayerPaths, ReferenceView>();

/** The one view of `reference` every diff against it shares. */
export function referenceView(reference: LayerPaths): ReferenceView {
  let view = referenceViews.get(reference);
  if (!view) referenceViews.set(reference, (view = new ReferenceView(reference)));
  return view;
}

/** Paths visited between two yields to the event loop. */
const VISITS_PER_TURN = 256;

/**
 * Every path where `sandbox` differs from `reference` (an untouched container of the same
 * image), found on the host without asking the engine: only the paths in the sandbox's
 * writable layer can differ, and each is compared with the reference's view (type, mode,
 * owner, size, mtime to the second, content). Deleted paths: a whiteout in the writable
 * layer, or, in a directory made opaque (removed and made again), every reference entry the
 * layer does not have. A directory is opaque when a reference entry the layer does not
 * have is missing from the sandbox's view of it. Read-only: nothing is followed through a
 * symbolic link.
 *
 * The walk uses the synchronous file-system calls: an episode's layer holds tens of paths,
 * and a synchronous lstat costs a tenth of the CPU of a promise-based one, and it lists
 * only the writable layer's directories, not the sandbox's merged view of them. A layer
 * with many paths still
 * yields to the event loop every {@link VISITS_PER_TURN} paths.
 * @param skip paths that are mounts, not the image's files.
 */
export async function diffAgainstReference(sandbox: LayerPaths, reference: LayerPaths, skip: (path: string) => boolean): Promise<FileSystemChange[]> {
  const changes: FileSystemChange[] = [];
  const view = referenceView(reference);
  await walkLayer(sandbox, skip, (path, mine) => {
    const theirs = view.stat(path);
    if (isWhiteout(mine)) {
      if (theirs) changes.push({ path, kind: 'deleted' });
      return undefined;
    }
    if (!theirs) {
      changes.push({ path, kind: 'added' });
      return undefined;
    }
    const sameType = (mine.mode & 0o170000) === (theirs.mode & 0o170000);
    if (!sameType || !sameMetadata(mine, theirs)) changes.push({ path, kind: 'modified' });
    else if (mine.isFile() && !view.sameContentAs(join(sandbox.upper, path), path, mine.size)) changes.push({ path, kind: 'modified' });
    if (!sameType || !mine.isDirectory()) return undefined;
    const children = readdirSync(join(sandbox.upper, path));
    const inLayer = new Set(children);
    const hidden = view.listing(path).filter((name) => !inLayer.has(name));
    if (hidden.length > 0 && !stat(join(sandbox.merged, path, hidden[0]!))) {
      for (const name of hidden) if (!skip(join(path, name))) changes.push({ path: join(path, name), kind: 'deleted' });
    }
    return children;
  });
  const seen = new Set<string>();
  return changes.filter((c) => !seen.has(c.path) && seen.add(c.path));
}

/**
 * Visits every path of `sandbox`'s writable layer but those `skip` names, depth first in
 * directory order; `visit` returns the entries of a directory to go into. A stopped
 * container's root is unmounted (every path would look added): `sandbox` is checked before
 * and after the walk, so a container killed meanwhile fails it instead of skewing it (a
 * reference's reads are checked where they are made: see ReferenceView).
 */
async function walkLayer(sandbox: LayerPaths, skip: (path: string) => boolean, visit: (path: string, mine: Stats) => readonly string[] | undefined): Promise<void> {
  const pending = readdirSync(sandbox.upper).map((name) => `/${name}`).reverse();
  requireMounted(sandbox);
  for (let visits = 1; pending.length > 0; visits++) {
    if (visits % VISITS_PER_TURN === 0) await new Promise((resolve) => setImmediate(resolve));
    const path = pending.pop()!;
    if (skip(path)) continue;
    const mine = stat(join(sandbox.upper, path));
    if (!mine) continue;
    const children = visit(path, mine) ?? [];
    for (let i = children.length - 1; i >= 0; i--) pending.push(join(path, children[i]!));
  }
  requireMounted(sandbox);
}

/**
 * Every path in `sandbox`'s writable layer — what a container that no one restored has
 * written since it was made from its image — read on the host: a whiteout as `deleted`,
 * anything else as `modified` (an added path too: the layer alone does not tell; and a
 * directory that is there only because something inside it was written). Unlike
 * {@link diffAgainstReference}, a path written back exactly as it was is listed.
 * @param skip paths that are mounts, not the image's files.
 */
export async function writtenPaths(sandbox: LayerPaths, skip: (path: string) => boolean): Promise<FileSystemChange[]> {
  const written: FileSystemChange[] = [];
  await walkLayer(sandbox, skip, (path, mine) => {
    written.push({ path, kind: isWhiteout(mine) ? 'deleted' : 'modified' });
    return mine.isDirectory() ? readdirSync(join(sandbox.upper, path)) : undefined;
  });
  return written;
}
