import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
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
}

/** Debian 12: the project's default base. */
export const DEBIAN_BOOKWORM: BaseImage = {
  tag: 'intercode-ts/base:bookworm',
  upstream: 'debian:bookworm-slim',
  suite: 'bookworm',
  mirrorVariable: 'INTERCODE_DEBIAN_MIRROR',
  defaultMirror: 'http://deb.debian.org/debian',
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
