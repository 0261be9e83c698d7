import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, chmodSync, chownSync, constants, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SandboxError } from '../../errors.js';
import { readTarHeaders } from './tar-headers.js';
import { CHANNEL_MOUNT } from './fifo-channel.js';
import { shellQuote } from '../shell/shell-script.js';
import type { HarnessShell, LayerArchive, LayerLimits, Sandbox, SandboxSpec } from '../types.js';
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

/**
 * What laying an archived layer over a running sandbox of the same image takes, through
 * the sandbox's own file system (see {@link APPLY_LAYER}): overlayfs there makes of each
 * removal a whiteout, of a folder made again an opaque one, and of each image path written
 * a copy-up (its `origin` attribute, and the `impure` mark of its folder: on ext4 these can
 * take a block of their own, which `du` and `ls -s` show), as in the episode.
 */
export interface InPlaceLayer {
  /**
   * Absolute paths removed first: the layer's whiteouts (image paths the episode deleted)
   * and opaque folders (image folders it removed and made again: none of their image
   * entries may show through).
   */
  readonly removals: readonly string[];
  /**
   * The members to extract (its whiteouts left out), as the archive names them, with their
   * absolute path; `folder`: a folder (one that is not replaces an image folder of its
   * name, if any: the episode removed that folder, which no attribute records); `copiedUp`:
   * an image file the episode wrote in place (overlayfs's `origin`), written in place again
   * so that it is copied up as it was, not made anew.
   */
  readonly members: readonly { name: string; path: string; folder: boolean; copiedUp: boolean }[];
}

const inPlaceLayers = new WeakMap<LayerArchive, Promise<InPlaceLayer | undefined>>();

/**
 * {@link InPlaceLayer} of `archive` (read once per archive). Undefined when the layer holds
 * what laying it over a sandbox cannot give as the episode had it: a folder renamed by
 * redirect, a copy of metadata only, a copied-up path that is neither a file nor a folder
 * (a symbolic link whose owner or times were set), holds extended attributes of its own or
 * is under a folder the episode replaced (moved there). Such a layer is laid only into a new sandbox (see extractLayer).
 */
export function inPlaceLayer(archive: LayerArchive): Promise<InPlaceLayer | undefined> {
  let plan = inPlaceLayers.get(archive);
  if (!plan) {
    plan = readInPlaceLayer(archive.path);
    inPlaceLayers.set(archive, plan);
  }
  return plan;
}

async function readInPlaceLayer(path: string): Promise<InPlaceLayer | undefined> {
  const removals: string[] = [];
  const members: { name: string; path: string; folder: boolean; copiedUp: boolean }[] = [];
  let layable = true;
  for (const header of readTarHeaders(path)) {
    const pax = header.pax;
    const absolute = `/${header.name.replace(/^\.\/?/, '').replace(/\/$/, '')}`;
    if (header.type === 'character-device' && header.devmajor === 0 && header.devminor === 0) removals.push(absolute);
    else {
      const folder = header.type === 'directory';
      const copiedUp = 'SCHILY.xattr.trusted.overlay.origin' in pax;
      members.push({ name: header.name, path: absolute, folder, copiedUp });
      if (pax['SCHILY.xattr.trusted.overlay.opaque'] === 'y') removals.push(absolute);
      if ('SCHILY.xattr.trusted.overlay.redirect' in pax || 'SCHILY.xattr.trusted.overlay.metacopy' in pax) layable = false;
      // Written in place without extended attributes (GNU tar makes a file anew to give it some).
      const ownAttributes = Object.keys(pax).some((key) => key.startsWith('SCHILY.xattr.') && !key.startsWith('SCHILY.xattr.trusted.overlay.'));
      if (copiedUp && !folder && (header.type !== 'file' || ownAttributes)) layable = false;
    }
  }
  const underRemoval = (path: string) => removals.some((removed) => path.startsWith(`${removed}/`));
  if (!layable || members.some(({ path: member, copiedUp, folder }) => copiedUp && !folder && underRemoval(member))) return undefined;
  return { removals, members };
}

/**
 * `__ic_apply_layer DIR CHECK REMOVE [FOLDER SIZE]…`, for a shell of the harness's own (root)
 * in the sandbox: lays the archive `DIR/layer.tar` over the sandbox's file system. Returns 3,
 * changing nothing, where (with CHECK 1) the sandbox has no GNU tar or a file named in
 * `DIR/copied-paths` is not a file there; then, with REMOVE 1, removes the NUL-separated paths in
 * `DIR/remove`; removes the folders found at the paths in `DIR/files` (members that are no
 * folders); grows each FOLDER to SIZE bytes as {@link growFolders} does; then GNU tar
 * extracts the members named, NUL-separated, in `DIR/members` (a path in the way removed
 * first; extended attributes but overlayfs's own), then those in `DIR/copied` written in
 * place (`--overwrite`, no attributes: overlayfs copies each image file up with its own),
 * atimes included (`-G`). Prints
 * nothing when done.
 */
export const APPLY_LAYER = `__ic_apply_layer() {
  local d=$1 c=$2 r=$3 f s i made
  shift 3
  [[ $c == 0 || $(tar --version 2>/dev/null) == *'GNU tar'* ]] || { builtin echo 'no GNU tar in the sandbox'; return 3; }
  while IFS= builtin read -r -d '' f; do [[ -f $f && ! -L $f ]] || { builtin echo "$f is no file here"; return 3; }; done < "$d/copied-paths"
  if [[ $r == 1 ]]; then xargs -0 rm -rf -- < "$d/remove" || return 1; fi
  while IFS= builtin read -r -d '' f; do [[ -d $f && ! -L $f ]] && { rm -rf -- "$f" || return 1; }; done < "$d/files"
  while (( $# >= 2 )); do
    f=$1 s=$2 made=()
    shift 2
    mkdir -p -- "$f" || return 1
    for ((i = 0; i < 1000000; i++)); do
      (( $(stat -c %s -- "$f") < s )) || break
      : > "$f/.\${i}${'x'.repeat(200)}" || return 1
      made+=("$f/.\${i}${'x'.repeat(200)}")
    done
    (( \${#made[@]} == 0 )) || rm -f -- "\${made[@]}" || return 1
  done
  local tar=(tar -G -x -p --same-owner --numeric-owner -C / -f "$d/layer.tar" --no-recursion --no-wildcards --null --verbatim-files-from)
  "\${tar[@]}" --xattrs --xattrs-include='*' --xattrs-exclude='trusted.overlay.*' -T "$d/members" 2>&1 || return 1
  [[ ! -s $d/copied ]] || "\${tar[@]}" --overwrite -T "$d/copied" 2>&1
}`;

/**
 * The call of {@link APPLY_LAYER} for `archive`, its files in `dir` (a path in the sandbox;
 * `checkTar`: ask whether the image's tar is GNU's; `removes`: with a `remove` list).
 */
export function applyLayerCommand(dir: string, archive: LayerArchive, checkTar: boolean, removes: boolean): string {
  const grown = (archive.grownFolders ?? []).flatMap(({ path, size }) => [shellQuote(`/${path}`), String(size)]);
  return ['__ic_apply_layer', shellQuote(dir), checkTar ? '1' : '0', removes ? '1' : '0', ...grown].join(' ');
}

/** Images whose tar was found to be GNU tar by a layer laid over one of their sandboxes (asked once per image and process). */
const IMAGES_WITH_GNU_TAR = new Set<string>();

/** The longest laying a checkpoint's files over a sandbox may take (a layer of 512 MiB at most: see LayerLimits). */
const APPLY_LAYER_TIMEOUT_MS = 120_000;

/** A running sandbox a layer is laid over in place (see {@link layLayerOver}). */
export interface LayerTarget {
  /** The sandbox's id, for messages. */
  readonly id: string;
  readonly image: string;
  /** A shell of the harness's own in it (see Sandbox.launchThrough). */
  readonly shell: HarnessShell;
  /** Its channel's shared folder on this host, seen at CHANNEL_MOUNT in the sandbox. */
  readonly shared: string;
  /** Whether the engine mounts `path` (what it mounts, and made in the layer for it, is the sandbox's already). */
  isMountPoint(path: string): boolean;
  /** The host file behind a mounted /etc file (see SandboxFromHost.fileOf). */
  hostFileOf(path: string): Promise<string | undefined>;
}

/**
 * Lays `layer` over `target`, a running sandbox of the layer's image as new, through the
 * harness's shell in it (see WrittenLayer.apply): the archive dropped into the channel
 * folder, then removals, grown folders and GNU tar in the sandbox ({@link APPLY_LAYER}),
 * then the mounted /etc files from the host.
 * @returns false, nothing changed, where it cannot (see WrittenLayer.apply); true when done.
 * @throws SandboxError when it failed part way.
 */
export async function layLayerOver(target: LayerTarget, layer: LayerArchive): Promise<boolean> {
  const name = `.layer-${randomBytes(6).toString('hex')}`;
  const dir = join(target.shared, name);
  mkdirSync(dir, { mode: 0o700 });
  try {
    // The archive is copied in while its plan is read.
    const [plan] = await Promise.all([inPlaceLayer(layer), copyFile(layer.path, join(dir, 'layer.tar'))]);
    if (!plan) return false;
    const removals = plan.removals.filter((path) => !target.isMountPoint(path));
    if (removals.length > 0) writeFileSync(join(dir, 'remove'), `${removals.join('\0')}\0`);
    const members = plan.members.filter(({ path }) => !target.isMountPoint(path));
    const copied = members.filter(({ copiedUp, folder }) => copiedUp && !folder);
    const made = members.filter(({ copiedUp, folder }) => !copiedUp || folder);
    const list = (file: string, items: readonly string[]) => writeFileSync(join(dir, file), items.map((item) => `${item}\0`).join(''));
    list('members', made.map(({ name }) => name));
    list('files', made.filter(({ folder }) => !folder).map(({ path }) => path));
    list('copied', copied.map(({ name }) => name));
    list('copied-paths', copied.map(({ path }) => path));
    const checkTar = !IMAGES_WITH_GNU_TAR.has(target.image);
    const applied = await target.shell.run(applyLayerCommand(`${CHANNEL_MOUNT}/${name}`, layer, checkTar, removals.length > 0), { definitions: [APPLY_LAYER], timeoutMs: APPLY_LAYER_TIMEOUT_MS });
    if (applied.exitCode === 3) return false;
    IMAGES_WITH_GNU_TAR.add(target.image);
    if (applied.exitCode !== 0 || applied.output !== '') {
      throw new SandboxError('SANDBOX_UNAVAILABLE', `Sandbox ${target.id.slice(0, 12)}: a checkpoint's files could not be laid over it: ${applied.output.slice(0, 500) || `exit ${applied.exitCode}`}`, { details: { sandbox: target.id } });
    }
    await restoreMountedFiles(layer, (path) => target.hostFileOf(path));
    return true;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** What {@link archiveContainerLayer} needs of a container: pausing it. */
export interface Pausable {
  pause(): Promise<unknown>;
  unpause(): Promise<unknown>;
}

/** How long a freeze may take to settle before it counts as failed (runc's own wait is about as long). */
const FREEZE_WAIT_MS = 2_000;

/**
 * The freezer of the cgroup the process `pid` (a container's init, as this host numbers it)
 * is in, driven from this host (cgroup v1's `freezer.state`, v2's `cgroup.freeze`): what
 * `docker pause` does, without the engine's round trips (tens of ms each here). Undefined
 * where it cannot be found or written (not root, another host's engine), or where that
 * cgroup's path does not name `containerId` (the process is gone and its number reused:
 * never freeze another's cgroup).
 */
export function cgroupFreezer(pid: number, containerId: string): Pausable | undefined {
  let lines: string[];
  try {
    lines = readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n');
  } catch {
    return undefined;
  }
  const v1 = lines.map((line) => line.split(':')).find(([, controllers]) => controllers?.split(',').includes('freezer'));
  if (v1?.[2]) {
    if (!v1[2].includes(containerId)) return undefined;
    return cgroupV1Freezer(join('/sys/fs/cgroup/freezer', v1[2]));
  }
  const v2 = lines.find((line) => line.startsWith('0::'));
  if (v2?.includes(containerId)) {
    const dir = join('/sys/fs/cgroup', v2.slice(3));
    return freezer(join(dir, 'cgroup.freeze'), '1', '0', () => /^frozen 1$/m.test(readFileSync(join(dir, 'cgroup.events'), 'utf8')));
  }
  return undefined;
}

/** The freezer of the cgroup v1 folder `dir` (in the freezer hierarchy); undefined where it cannot be written. */
export function cgroupV1Freezer(dir: string): Pausable | undefined {
  return freezer(join(dir, 'freezer.state'), 'FROZEN', 'THAWED', (state) => state.trim() === 'FROZEN');
}

/** A freezer writing `frozen` or `thawed` into `control`, frozen once `settled` says so (given `control`'s content). */
function freezer(control: string, frozen: string, thawed: string, settled: (state: string) => boolean): Pausable | undefined {
  try {
    accessSync(control, constants.W_OK);
  } catch {
    return undefined;
  }
  return {
    async pause() {
      writeFileSync(control, frozen);
      const started = performance.now();
      while (!settled(readFileSync(control, 'utf8'))) {
        if (performance.now() - started > FREEZE_WAIT_MS) {
          writeFileSync(control, thawed);
          throw new Error(`unable to freeze: the cgroup did not settle within ${FREEZE_WAIT_MS} ms`);
        }
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
    },
    async unpause() {
      writeFileSync(control, thawed);
    },
  };
}

/**
 * {@link archiveLayer} of a running container, frozen meanwhile (cgroup freezer: no process
 * of it writes while the layer is read; `container` undefined: the caller knows none does),
 * with the /etc files the engine mounts for it (`etcFiles`: path in the container → host file).
 */
export async function archiveContainerLayer(container: Pausable | undefined, upper: string, etcFiles: ReadonlyMap<string, string>, archivePath: string, limits: LayerLimits): Promise<LayerArchive> {
  if (container) await pauseRetrying(container);
  try {
    const archive = await archiveLayer(upper, archivePath, limits);
    const mountedFiles = [...etcFiles].map(([path, host]) => {
      const { mode, uid, gid } = statSync(host);
      return { path, content: readFileSync(host), mode: mode & 0o7777, uid, gid };
    });
    const layer = { ...archive, mountedFiles };
    // Read now (its headers only: one read per member): a fork lays it over a spare right after.
    // Its failure is seen where the layer is laid in place, if ever.
    inPlaceLayer(layer).catch(() => undefined);
    return layer;
  } finally {
    await container?.unpause();
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

/**
 * `made` (a new sandbox of `spec` whose file system is `archive`'s) with the files the engine
 * mounts at /etc given what `archive` recorded (see restoreMountedFiles); a sandbox that cannot
 * take them is removed, and SANDBOX_UNAVAILABLE thrown (see SandboxRuntime.createFromLayer).
 */
export async function withMountedFiles<T extends Sandbox>(made: Promise<T>, spec: SandboxSpec, archive: LayerArchive): Promise<T> {
  const sandbox = await made;
  try {
    await restoreMountedFiles(archive, (path) => sandbox.fromHost?.fileOf(path) ?? Promise.resolve(undefined));
    return sandbox;
  } catch (error) {
    await sandbox.destroy().catch(() => undefined);
    throw new SandboxError('SANDBOX_UNAVAILABLE', `Could not give a sandbox from ${spec.image} its checkpoint's mounted files`, { details: { image: spec.image }, cause: error });
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
