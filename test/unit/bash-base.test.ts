/**
 * The bash env's `--base` choice and the base-image plumbing behind it, without Docker:
 * flag parsing, which recipe each base gives, debootstrap's command line and the check of
 * the pinned Release file.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { bashPlugin, chooseBashBase } from '../../envs/bash/plugin.js';
import { bashRuntimeRecipe, bashTestbedRecipe, parseBashBase } from '../../envs/bash/images.js';
import { EngineSet } from '../../src/sandbox/backends/engine-set.js';
import { ConfigError, ImageError } from '../../src/errors.js';
import { DEBIAN_BOOKWORM, debootstrapArgs, slimLikeDebianImage, UBUNTU_JAMMY, verifyPinnedRelease, type BaseImage } from '../../src/images/base-images.js';
import { recipeTag } from '../../src/images/recipe.js';

describe('--base', () => {
  it('accepts the two bases', () => {
    expect(parseBashBase('debian-bookworm')).toBe('debian-bookworm');
    expect(parseBashBase('ubuntu-jammy')).toBe('ubuntu-jammy');
  });

  it.each(['jammy', 'ubuntu', 'Ubuntu-Jammy', ''])('refuses %j naming the flag and the choices', (value) => {
    const error = (() => {
      try {
        parseBashBase(value);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toBe(`--base must be one of debian-bookworm, ubuntu-jammy, got "${value}"`);
  });

  it('defaults to InterCode\'s Ubuntu for replays and to Debian elsewhere; a given value wins', () => {
    expect(chooseBashBase(undefined, 'replay')).toBe('ubuntu-jammy');
    for (const purpose of ['play', 'run', 'eval', 'collect'] as const) expect(chooseBashBase(undefined, purpose)).toBe('debian-bookworm');
    expect(chooseBashBase('debian-bookworm', 'replay')).toBe('debian-bookworm');
    expect(chooseBashBase('ubuntu-jammy', 'run')).toBe('ubuntu-jammy');
    expect(() => chooseBashBase('bookworm', 'replay')).toThrow(ConfigError);
  });

  it('is checked before any engine is contacted', async () => {
    await expect(bashPlugin.createEnvs({ base: 'alpine' }, 1, { purpose: 'replay', log: () => undefined, engines: EngineSet.local() })).rejects.toBeInstanceOf(ConfigError);
  });
});

describe('bash recipes per base', () => {
  it('builds on Debian by default and on the pinned jammy base with InterCode\'s package list', async () => {
    const debian = await bashRuntimeRecipe();
    expect(debian.parent).toBe('base');
    const jammy = await bashRuntimeRecipe('ubuntu-jammy');
    expect(jammy.parent).toBe(UBUNTU_JAMMY);
    expect(jammy.dockerfile).toContain(
      'apt-get install -y bash python3 psmisc bsdmainutils cron imagemagick dnsutils git tree net-tools iputils-ping coreutils curl cpio jq',
    );
    expect(jammy.dockerfile).not.toMatch(/^ENV /m);
    const testbed = await bashTestbedRecipe('none', 'ubuntu-jammy');
    expect(testbed.parent).toEqual(jammy);
  });

  it('adds no tree, and no stray /testbed.tar, for --testbed none', async () => {
    const none = await bashTestbedRecipe('none', 'ubuntu-jammy');
    expect(Object.keys(none.files)).toEqual(['gitignore']);
    expect(none.dockerfile).not.toContain('testbed.tar');
    expect(none.dockerfile).toContain('git init');
    const dir = await mkdtemp(join(tmpdir(), 'intercode-tree-'));
    try {
      await writeFile(join(dir, 'a.txt'), 'a\n');
      const tree = await bashTestbedRecipe(dir);
      expect(Object.keys(tree.files).sort()).toEqual(['gitignore', 'testbed.tar']);
      expect(tree.dockerfile).toMatch(/^ADD testbed\.tar \/$/m);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('gives each base its own tag for the same testbed', async () => {
    const debian = await bashRuntimeRecipe('debian-bookworm');
    const jammy = await bashRuntimeRecipe('ubuntu-jammy');
    expect(recipeTag(debian, 'sha256:aaa')).not.toBe(recipeTag(jammy, 'sha256:bbb'));
    expect(recipeTag(jammy, 'sha256:bbb')).toBe(recipeTag(await bashRuntimeRecipe('ubuntu-jammy'), 'sha256:bbb'));
    expect(recipeTag(jammy, 'sha256:bbb')).not.toBe(recipeTag(jammy, 'sha256:ccc'));
  });
});

describe('debootstrap', () => {
  it('bootstraps bookworm from the Debian mirror, or the one named in the environment', () => {
    expect(debootstrapArgs(DEBIAN_BOOKWORM, '/r', {})).toEqual(['--variant=minbase', 'bookworm', '/r', 'http://deb.debian.org/debian']);
    expect(debootstrapArgs(DEBIAN_BOOKWORM, '/r', { INTERCODE_DEBIAN_MIRROR: 'http://127.0.0.1:3142/debian' })).toEqual([
      '--variant=minbase',
      'bookworm',
      '/r',
      'http://127.0.0.1:3142/debian',
    ]);
  });

  it('bootstraps jammy without the keyring the host lacks, from debootstrap\'s own mirror unless one is named', () => {
    expect(debootstrapArgs(UBUNTU_JAMMY, '/r', {})).toEqual(['--variant=minbase', '--no-check-gpg', 'jammy', '/r']);
    expect(debootstrapArgs(UBUNTU_JAMMY, '/r', { INTERCODE_UBUNTU_MIRROR: 'http://127.0.0.1:3142/ubuntu' })).toEqual([
      '--variant=minbase',
      '--no-check-gpg',
      'jammy',
      '/r',
      'http://127.0.0.1:3142/ubuntu',
    ]);
  });
});

describe('pinned Release file', () => {
  const roots: string[] = [];
  afterEach(async () => {
    await Promise.all(roots.splice(0).map((root) => rm(root, { recursive: true, force: true })));
  });

  async function rootWithRelease(content: string | undefined): Promise<string> {
    const root = await mkdtemp(join(tmpdir(), 'intercode-release-'));
    roots.push(root);
    const lists = join(root, 'var', 'lib', 'apt', 'lists');
    await mkdir(lists, { recursive: true });
    await writeFile(join(lists, 'mirror.example_ubuntu_dists_jammy_InRelease'), 'signed copy, not checked');
    if (content !== undefined) await writeFile(join(lists, 'mirror.example_ubuntu_dists_jammy_Release'), content);
    return root;
  }

  const pinned = (content: string): BaseImage => ({
    ...UBUNTU_JAMMY,
    pinnedReleaseSha256: createHash('sha256').update(content).digest('hex'),
  });

  it('passes when the Release file debootstrap used has the pinned hash', async () => {
    await expect(verifyPinnedRelease(pinned('Suite: jammy\n'), await rootWithRelease('Suite: jammy\n'))).resolves.toBeUndefined();
  });

  it('refuses another Release file, naming it and both hashes', async () => {
    const root = await rootWithRelease('Suite: jammy\nDate: later\n');
    const error = await verifyPinnedRelease(pinned('Suite: jammy\n'), root).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ImageError);
    expect((error as ImageError).code).toBe('IMAGE_BUILD_FAILED');
    expect((error as ImageError).message).toContain('mirror.example_ubuntu_dists_jammy_Release has SHA-256');
    expect((error as ImageError).details).toMatchObject({ expected: pinned('Suite: jammy\n').pinnedReleaseSha256 });
  });

  it('refuses a tree without a Release file', async () => {
    await expect(verifyPinnedRelease(pinned('x'), await rootWithRelease(undefined))).rejects.toThrow(/left no jammy Release file/);
  });

  it('checks nothing for a base whose keyring the host has', async () => {
    await expect(verifyPinnedRelease(DEBIAN_BOOKWORM, '/nonexistent')).resolves.toBeUndefined();
  });
});

describe('the bootstrapped Debian base, made slim', () => {
  let root: string | undefined;
  afterEach(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('keeps out what Docker\'s debian slim image does, and keeps it out of later installs', async () => {
    root = await mkdtemp(join(tmpdir(), 'intercode-slim-'));
    const tree: Record<string, string> = {
      'usr/share/doc/git/copyright': 'c',
      'usr/share/doc/git/README.md': 'r',
      'usr/share/doc/git/howto/recipe.txt': 'h',
      'usr/share/man/man1/ls.1.gz': 'm',
      'usr/share/locale/locale.alias': 'a',
      'usr/share/locale/de/LC_MESSAGES/git.mo': 'mo',
      'usr/share/info/dir': 'i',
      'usr/share/common-licenses/GPL': 'g',
      'usr/share/zoneinfo/UTC': 'z',
    };
    for (const [path, content] of Object.entries(tree)) {
      await mkdir(join(root, dirname(path)), { recursive: true });
      await writeFile(join(root, path), content);
    }
    await mkdir(join(root, 'usr/share/doc/libc6'), { recursive: true });
    // A link resolved inside the tree (absolute from its root), one left dangling by the pruning, and a folder link.
    await symlink('/usr/share/common-licenses/GPL', join(root, 'usr/share/doc/libc6/copyright'));
    await symlink('/usr/share/doc/git/README.md', join(root, 'usr/share/doc/libc6/README.md'));
    await symlink('git', join(root, 'usr/share/doc/git-man'));

    await slimLikeDebianImage(root);

    // (readdir goes through the folder link: what it shows there is git's folder again.)
    const left = (await readdir(root, { recursive: true })).map(String).filter((p) => p.startsWith('usr/share/') && !p.startsWith('usr/share/doc/git-man/')).sort();
    expect(left).toEqual([
      'usr/share/common-licenses',
      'usr/share/common-licenses/GPL',
      'usr/share/doc',
      'usr/share/doc/git',
      'usr/share/doc/git-man',
      'usr/share/doc/git/copyright',
      'usr/share/doc/libc6',
      'usr/share/doc/libc6/copyright',
      'usr/share/info',
      'usr/share/locale',
      'usr/share/locale/locale.alias',
      'usr/share/man',
      'usr/share/zoneinfo',
      'usr/share/zoneinfo/UTC',
    ]);
    expect(await readlink(join(root, 'usr/share/doc/git-man'))).toBe('git');
    const config = await readFile(join(root, 'etc/dpkg/dpkg.cfg.d/docker'), 'utf8');
    expect(config).toContain('path-exclude /usr/share/doc/*\n');
    expect(config).toContain('path-include /usr/share/doc/*/copyright\n');
    expect(config).toContain('path-exclude /usr/share/man/*\n');
    expect(config).toContain('path-include /usr/share/locale/locale.alias\n');
  });

  it('is what a bootstrapped bookworm base is finished with, under its own tag', () => {
    expect(DEBIAN_BOOKWORM.finish).toBe(slimLikeDebianImage);
    expect(DEBIAN_BOOKWORM.tag).toBe('intercode-ts/base:bookworm-slim');
  });
});
