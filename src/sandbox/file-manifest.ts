import { gunzipSync } from 'node:zlib';
import type { FileSystemChange, Sandbox } from './types.js';
import { unescapeMountPath } from './host-mounts.js';

/**
 * A listing of a sandbox's own file system, taken from inside it (no access to the
 * engine's host needed): for a remote runtime (Kubernetes) what `Sandbox.changes()` is
 * built on.
 *
 * Why comparing two listings finds every change: each path's type, mode, owner, size,
 * mtime, inode, link target and **ctime** are recorded. A process can forge an mtime
 * (`touch -d`) but not a ctime: any write, chmod, chown, link, rename or utime sets it to
 * the clock, which the sandbox cannot set (no CAP_SYS_TIME). So a path whose content or
 * metadata changed in any way shows a new ctime, added and deleted paths show in the
 * listing itself, and directories whose entries changed show a new mtime and ctime.
 * Mount points (the kernel's file systems, files the node bind-mounts) are left out, as
 * `-xdev` leaves out what is under them.
 */
export type Manifest = Map<string, string>;

/**
 * One exec: the mount points (from /proc/self/mountinfo, NUL-separated), a `\x01\0`
 * separator, then GNU find's listing: per path `type mode uid gid size mtime ctime inode`,
 * NUL, the path, NUL, the link target, NUL. Gzipped when the image has gzip (a listing of
 * a Debian image is ~1.4 MB, ~0.3 MB gzipped: the exec stream is the slow part).
 */
const LIST = String.raw`set -o pipefail; z=cat; command -v gzip >/dev/null && z='gzip -1'; { while read -r _ _ _ _ m _; do printf '%s\0' "$m"; done < /proc/self/mountinfo; printf '\1\0'; find / -xdev -printf '%y %m %U %G %s %T@ %C@ %i\0%p\0%l\0'; } | $z`;

/**
 * The most a gunzipped listing may hold (a Debian image's is ~1.4 MB). The pod's own gzip
 * wrote it, and an agent can replace that gzip: a bomb must not unpack in the harness.
 */
const MAX_LISTING_BYTES = 256 * 2 ** 20;

function gunzipListing(gzipped: Buffer): Buffer {
  try {
    return gunzipSync(gzipped, { maxOutputLength: MAX_LISTING_BYTES });
  } catch (error) {
    throw new Error(`listing the sandbox's files failed (the gzipped listing does not unpack within ${MAX_LISTING_BYTES} bytes: ${(error as Error).message})`);
  }
}

/**
 * Lists `sandbox`'s files from inside.
 * @throws SandboxError SANDBOX_LOST from the sandbox; Error when the listing did not complete.
 */
export async function takeManifest(sandbox: Sandbox): Promise<Manifest> {
  const listing = await sandbox.exec(['bash', '-c', LIST], { timeoutMs: 120_000 });
  // find exits 1 when a path vanished during the walk or is unreadable; the listing is still whole for the rest.
  if (listing.timedOut || listing.exitCode === null || listing.exitCode > 1) {
    throw new Error(`listing the sandbox's files failed (exit code ${listing.exitCode}${listing.timedOut ? ', timed out' : ''})`);
  }
  const raw = listing.output[0] === 0x1f && listing.output[1] === 0x8b ? gunzipListing(listing.output) : listing.output;
  const text = raw.toString('utf8');
  const split = text.indexOf('\x01\0');
  if (split < 0) throw new Error("listing the sandbox's files failed (no mount list)");
  const mountPoints = new Set(text.slice(0, split).split('\0').filter(Boolean).map(unescapeMountPath));
  const fields = text.slice(split + 2).split('\0');
  const manifest: Manifest = new Map();
  for (let i = 0; i + 2 < fields.length; i += 3) {
    const path = fields[i + 1]!;
    if (path === '/' || mountPoints.has(path)) continue;
    manifest.set(path, `${fields[i]} ${fields[i + 2]}`);
  }
  return manifest;
}

/** What changed from `before` to `after`, as `Sandbox.changes()` reports it. */
export function manifestChanges(before: Manifest, after: Manifest): FileSystemChange[] {
  const changes: FileSystemChange[] = [];
  for (const [path, entry] of after) {
    const old = before.get(path);
    if (old === undefined) changes.push({ path, kind: 'added' });
    else if (old === entry) continue;
    // A path whose type changed (a file now a directory, say) is removed and put back whole.
    else if (type(old) !== type(entry)) changes.push({ path, kind: 'added' }, { path, kind: 'deleted' });
    else changes.push({ path, kind: 'modified' });
  }
  // Deleted: the outermost paths only (a deleted directory stands for its subtree, as in a layer diff).
  for (const path of before.keys()) {
    if (after.has(path)) continue;
    const parent = path.slice(0, path.lastIndexOf('/')) || '/';
    if (parent === '/' || after.has(parent) && after.get(parent)!.startsWith('d') && type(before.get(parent) ?? '') === 'd') changes.push({ path, kind: 'deleted' });
  }
  return changes;
}

const type = (entry: string) => entry.slice(0, 1);
