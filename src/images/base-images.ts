import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ImageError } from '../errors.js';

/**
 * A base image env images are built FROM: pulled from a registry where one answers, else
 * bootstrapped with `debootstrap --variant=minbase` and `docker import`ed under `tag`.
 */
export interface BaseImage {
  /** Local name, e.g. `intercode-ts/base:bookworm`. */
  tag: string;
  /** Pulled (and re-tagged as `tag`) where a registry answers. */
  upstream: string;
  /** debootstrap suite. */
  suite: string;
  /** Environment variable naming a mirror; unset: `defaultMirror`, or debootstrap's own default for the suite. */
  mirrorVariable: string;
  defaultMirror?: string;
  /**
   * SHA-256 of the suite's frozen `dists/<suite>/Release` file, for suites whose archive
   * keyring the host lacks: debootstrap then runs with `--no-check-gpg` and the Release
   * file it used must have this hash (debootstrap itself checks the package indexes against
   * the Release file, and every package against the indexes).
   */
  pinnedReleaseSha256?: string;
  /** Run on the bootstrapped tree (as root) before it is imported. */
  finish?: (root: string) => Promise<void>;
  /** About how long bootstrapping it takes on the project's machine (docs/setup.md#images), said before it starts; absent: not measured. */
  typicalBuildSeconds?: number;
}

/**
 * Debian 12: the project's default base. Bootstrapped, it is made what its upstream name
 * says, Docker's `debian:bookworm-slim`: see {@link slimLikeDebianImage}.
 */
export const DEBIAN_BOOKWORM: BaseImage = {
  tag: 'intercode-ts/base:bookworm-slim',
  upstream: 'debian:bookworm-slim',
  suite: 'bookworm',
  mirrorVariable: 'INTERCODE_DEBIAN_MIRROR',
  defaultMirror: 'http://deb.debian.org/debian',
  finish: slimLikeDebianImage,
  typicalBuildSeconds: 30,
};

/**
 * Ubuntu 22.04, what InterCode's bash image was built FROM (`ubuntu:latest` in 2023).
 * Bootstrapped, it is made to look like Docker's `ubuntu:22.04` image: see {@link minimizeLikeUbuntuImage}.
 */
export const UBUNTU_JAMMY: BaseImage = {
  tag: 'intercode-ts/base:jammy',
  upstream: 'ubuntu:22.04',
  suite: 'jammy',
  mirrorVariable: 'INTERCODE_UBUNTU_MIRROR',
  pinnedReleaseSha256: '269a3a900ff8b8bc9bc3c6743f9927d90c4b81ad34b35c2753f8d9aadff926da',
  finish: minimizeLikeUbuntuImage,
};

/** The debootstrap command line for `base` into `root`. */
export function debootstrapArgs(base: BaseImage, root: string, env: NodeJS.ProcessEnv = process.env): string[] {
  const mirror = env[base.mirrorVariable] || base.defaultMirror;
  return [
    '--variant=minbase',
    ...(base.pinnedReleaseSha256 ? ['--no-check-gpg'] : []),
    base.suite,
    root,
    ...(mirror ? [mirror] : []),
  ];
}

/**
 * Checks the Release file debootstrap left in `root` against `base.pinnedReleaseSha256`.
 * @throws ImageError IMAGE_BUILD_FAILED when it is missing or differs.
 */
export async function verifyPinnedRelease(base: BaseImage, root: string): Promise<void> {
  if (!base.pinnedReleaseSha256) return;
  const lists = join(root, 'var', 'lib', 'apt', 'lists');
  const name = (await readdir(lists)).find((file) => file.endsWith(`_dists_${base.suite}_Release`));
  if (!name) throw new ImageError('IMAGE_BUILD_FAILED', `debootstrap left no ${base.suite} Release file in ${lists}`);
  const digest = createHash('sha256').update(await readFile(join(lists, name))).digest('hex');
  if (digest !== base.pinnedReleaseSha256) {
    throw new ImageError(
      'IMAGE_BUILD_FAILED',
      `${join(lists, name)} has SHA-256 ${digest}, expected ${base.pinnedReleaseSha256}: the mirror served another ${base.suite} Release file; refusing to use it`,
      { details: { file: join(lists, name), digest, expected: base.pinnedReleaseSha256 } },
    );
  }
}

/** Paths Docker's Ubuntu images keep out of every package they install (dpkg path filters). */
const UBUNTU_IMAGE_DPKG_FILTERS = [
  'path-exclude=/usr/share/man/*',
  'path-exclude=/usr/share/locale/*/LC_MESSAGES/*.mo',
  'path-exclude=/usr/share/doc/*',
  'path-include=/usr/share/doc/*/copyright',
  'path-include=/usr/share/doc/*/changelog.Debian.*',
  'path-exclude=/usr/share/groff/*',
  'path-exclude=/usr/share/info/*',
  'path-exclude=/usr/share/lintian/*',
  'path-exclude=/usr/share/linda/*',
];

/** What `man` prints in Docker's Ubuntu images (the text InterCode's recorded observations show). */
const MINIMIZED_MAN = `#!/bin/sh
echo ""
echo "This system has been minimized by removing packages and content that are"
echo "not required on a system that users do not log into."
echo ""
echo "To restore this content, including manpages, you can run the 'unminimize'"
echo "command. You will still need to ensure the 'man-db' package is installed."
`;

function chroot(root: string, args: string[]): void {
  const result = spawnSync('chroot', [root, ...args], { encoding: 'utf8' });
  if (result.status !== 0) {
    throw new ImageError('IMAGE_BUILD_FAILED', `chroot ${root} ${args.join(' ')} failed: ${result.stderr || result.error?.message}`);
  }
}

/**
 * Makes a bootstrapped Ubuntu tree behave like Docker's `ubuntu` image where an agent can
 * tell: the same dpkg path filters (no manuals or documentation, for what is installed now
 * and later), `man` diverted to the "minimized" notice, its merged-/usr links `/lib32` and
 * `/libx32` (debootstrap's jammy script makes only `/lib64`), and the image's apt sources
 * (all four components; release, updates, backports and security pockets) on the mirror used.
 */
export async function minimizeLikeUbuntuImage(root: string): Promise<void> {
  await mkdir(join(root, 'etc', 'dpkg', 'dpkg.cfg.d'), { recursive: true });
  await writeFile(join(root, 'etc', 'dpkg', 'dpkg.cfg.d', 'excludes'), `${UBUNTU_IMAGE_DPKG_FILTERS.join('\n')}\n`);
  for (const dir of ['man', 'groff', 'info', 'lintian', 'linda']) await rm(join(root, 'usr', 'share', dir), { recursive: true, force: true });
  const docs = join(root, 'usr', 'share', 'doc');
  for (const pkg of await readdir(docs).catch(() => [] as string[])) {
    for (const file of await readdir(join(docs, pkg)).catch(() => [] as string[])) {
      if (file !== 'copyright' && !file.startsWith('changelog.Debian.')) await rm(join(docs, pkg, file), { recursive: true, force: true });
    }
  }
  for (const dir of ['lib32', 'libx32']) {
    await mkdir(join(root, 'usr', dir), { recursive: true });
    await symlink(`usr/${dir}`, join(root, dir)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
  }
  chroot(root, ['dpkg-divert', '--quiet', '--local', '--rename', '--add', '/usr/bin/man']);
  await writeFile(join(root, 'usr', 'bin', 'man'), MINIMIZED_MAN, { mode: 0o755 });
  const sources = join(root, 'etc', 'apt', 'sources.list');
  const [, mirror, suite] = /^deb\s+(\S+)\s+(\S+)/m.exec(await readFile(sources, 'utf8')) ?? [];
  if (!mirror || !suite) throw new ImageError('IMAGE_BUILD_FAILED', `${sources} names no mirror and suite`);
  const pockets = ['', '-updates', '-backports', '-security'].map((pocket) => `${suite}${pocket}`);
  await writeFile(sources, pockets.map((pocket) => `deb ${mirror} ${pocket} main restricted universe multiverse\n`).join(''));
}

/**
 * What Docker's Debian "slim" images keep out of every package (debuerreotype's slimify
 * lists): documentation but the copyright files, manuals, info pages, translations but a
 * few language-neutral files. Globs as dpkg reads them (`*` also matches `/`).
 */
const DEBIAN_SLIM_EXCLUDES = [
  '/usr/share/doc/*',
  '/usr/share/groff/*',
  '/usr/share/info/*',
  '/usr/share/linda/*',
  '/usr/share/lintian/overrides/*',
  '/usr/share/locale/*',
  '/usr/share/man/*',
];
const DEBIAN_SLIM_INCLUDES = [
  '/usr/share/doc/*/copyright',
  '/usr/share/doc/kde/HTML/C/*',
  '/usr/share/gnome/help/*/C/*',
  '/usr/share/locale/all_languages',
  '/usr/share/locale/currency/*',
  '/usr/share/locale/l10n/*',
  '/usr/share/locale/languages',
  '/usr/share/locale/locale.alias',
  '/usr/share/omf/*/*-C.emf',
];

/** A dpkg path glob as a regular expression over an absolute path. */
function dpkgGlob(glob: string): RegExp {
  return new RegExp(`^${glob.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
}

/**
 * Whether `path` (absolute, inside the tree at `root`) leads somewhere in that tree, every
 * symbolic link on the way read as the tree's own system would (absolute targets from `root`).
 */
async function resolvesInTree(root: string, path: string): Promise<boolean> {
  const pending = path.split('/').filter(Boolean);
  const reached: string[] = [];
  for (let hops = 0; pending.length > 0; ) {
    const name = pending.shift()!;
    if (name === '.') continue;
    if (name === '..') {
      reached.pop();
      continue;
    }
    const here = join(root, ...reached, name);
    const info = await lstat(here).catch(() => undefined);
    if (!info) return false;
    if (!info.isSymbolicLink()) {
      reached.push(name);
      continue;
    }
    if (++hops > 40) return false;
    const target = await readlink(here);
    if (target.startsWith('/')) reached.length = 0;
    pending.unshift(...target.split('/').filter(Boolean));
  }
  return true;
}

/**
 * Makes a bootstrapped Debian tree what Docker's `debian:<suite>-slim` image is, so a base
 * built offline holds the same files as a pulled one: the slim dpkg path filters in
 * `/etc/dpkg/dpkg.cfg.d/docker` (for what is installed later), and what they exclude
 * removed from the tree now, as debuerreotype does: under each excluded folder every file
 * no include names, then, until none is left, the folders left empty and the links left dangling.
 */
export async function slimLikeDebianImage(root: string): Promise<void> {
  const includes = DEBIAN_SLIM_INCLUDES.map(dpkgGlob);
  await mkdir(join(root, 'etc', 'dpkg', 'dpkg.cfg.d'), { recursive: true });
  const filters = [...DEBIAN_SLIM_EXCLUDES.map((glob) => `path-exclude ${glob}`), ...DEBIAN_SLIM_INCLUDES.map((glob) => `path-include ${glob}`)];
  await writeFile(join(root, 'etc', 'dpkg', 'dpkg.cfg.d', 'docker'), `# The "slim" variant: files most containers never need are kept out.\n${filters.join('\n')}\n`);
  /** Everything below `path`, deepest first. */
  const below = async (path: string): Promise<string[]> => {
    const names = await readdir(join(root, path)).catch(() => [] as string[]);
    const paths: string[] = [];
    for (const name of names) {
      const child = `${path}/${name}`;
      if ((await lstat(join(root, child))).isDirectory()) paths.push(...(await below(child)));
      paths.push(child);
    }
    return paths;
  };
  for (const folder of new Set(DEBIAN_SLIM_EXCLUDES.map((glob) => glob.slice(0, glob.lastIndexOf('/'))))) {
    for (const path of await below(folder)) {
      const info = await lstat(join(root, path));
      if (!info.isDirectory() && !info.isSymbolicLink() && !includes.some((glob) => glob.test(path))) await rm(join(root, path));
    }
    for (let removed = true; removed; ) {
      removed = false;
      for (const path of await below(folder)) {
        const info = await lstat(join(root, path));
        const gone = info.isDirectory() ? (await readdir(join(root, path))).length === 0 : info.isSymbolicLink() && !(await resolvesInTree(root, path));
        if (gone) {
          await rm(join(root, path), { recursive: true });
          removed = true;
        }
      }
    }
  }
}
