import { open, readFile, stat } from 'node:fs/promises';
import { extract } from 'tar-stream';
import { UBUNTU_JAMMY } from '../../src/images/base-images.js';
import type { ImageRecipe } from '../../src/images/recipe.js';
import { directoryEntries, FIXED_MTIME, packEntries } from '../../src/images/tar.js';
import { DatasetError, oneOf } from '../../src/errors.js';

import { packagePath } from '../../src/package-path.js';

const source = (name: string) => packagePath('envs', 'bash', name);

/** The project's own testbed, a tree shipped in datasets/bash/testbed. */
export const BUILTIN_TESTBED = packagePath('datasets', 'bash', 'testbed');

/**
 * The system the bash image is built on: Debian 12 (the default) or Ubuntu 22.04, the system
 * InterCode's NL2Bash image had (bash 5.1, coreutils 8.32), with InterCode's package list.
 */
export const BASH_BASES = ['debian-bookworm', 'ubuntu-jammy'] as const;
export type BashBase = (typeof BASH_BASES)[number];

/** Checks a `--base` value. @throws ConfigError naming the flag and the known bases. */
export function parseBashBase(value: string, option = '--base'): BashBase {
  return oneOf(option, value, BASH_BASES);
}

/** The image with the NL2Bash tools, on `base`. */
export async function bashRuntimeRecipe(base: BashBase = 'debian-bookworm'): Promise<ImageRecipe> {
  return base === 'ubuntu-jammy'
    ? { repository: 'intercode-ts/bash', dockerfile: await readFile(source('jammy.Dockerfile'), 'utf8'), files: {}, parent: UBUNTU_JAMMY }
    : { repository: 'intercode-ts/bash', dockerfile: await readFile(source('Dockerfile'), 'utf8'), files: {}, parent: 'base', typicalBuildSeconds: 25 };
}

/**
 * The image for one testbed: a tarball (extracted at /, like InterCode's fs-N.tar) or a
 * directory (placed at /testbed, files owned by root, fixed times, only the x bit kept),
 * or `none` for no tree at all (InterCode's fs-4 system queries); on `base`.
 */
/**
 * Whether a `--testbed` path is a directory or an archive Docker's ADD unpacks (tar, plain
 * or gzip/bzip2/xz-compressed; an all-zero first block is an empty tar).
 * @throws DatasetError naming the path when it cannot be read or is neither.
 */
export async function testbedKind(testbed: string): Promise<'directory' | 'archive'> {
  const fail = (problem: string, cause?: unknown): never => {
    throw new DatasetError({ file: testbed }, `--testbed ${problem}`, cause);
  };
  const info = await stat(testbed).catch((error: NodeJS.ErrnoException) => fail(`cannot be read (${error.code ?? 'unknown error'})`, error));
  if (info.isDirectory()) return 'directory';
  if (!info.isFile()) return fail('must be a tar archive, a directory or none');
  const handle = await open(testbed, 'r');
  const head = Buffer.alloc(512);
  try {
    await handle.read(head, 0, 512, 0);
  } finally {
    await handle.close();
  }
  const tar = head.subarray(257, 262).toString('latin1') === 'ustar' || (info.size >= 512 && head.every((b) => b === 0));
  const compressed = (head[0] === 0x1f && head[1] === 0x8b) || head.subarray(0, 3).toString('latin1') === 'BZh' || head.subarray(0, 6).equals(Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]));
  if (!tar && !compressed) fail('is neither a tar archive (plain, gzip, bzip2 or xz) nor a directory');
  return 'archive';
}

export async function bashTestbedRecipe(testbed: string = BUILTIN_TESTBED, base: BashBase = 'debian-bookworm'): Promise<ImageRecipe> {
  const dockerfile = await readFile(source('testbed.Dockerfile'), 'utf8');
  const common = { repository: 'intercode-ts/bash-testbed', parent: await bashRuntimeRecipe(base), typicalBuildSeconds: 3 };
  const gitignore = await readFile(source('gitignore'));
  if (testbed === 'none') {
    // No ADD at all: Docker copies a tar with no entries as a plain file, /testbed.tar.
    return { ...common, dockerfile: dockerfile.replace(TESTBED_ADD, ''), files: { gitignore } };
  }
  const tar = (await testbedKind(testbed)) === 'directory' ? await packEntries(await directoryEntries(testbed, 'testbed')) : await readFile(testbed);
  return { ...common, dockerfile, files: { 'testbed.tar': tar, gitignore } };
}

const TESTBED_ADD = /^ADD testbed\.tar \/\n/m;

/** Where a testbed lands at / and when it was written: what `--reset intercode` re-dates (see INTERCODE_FRESH_TESTBED_SCRIPT). */
export interface TestbedTree {
  /** Its top-level entries at / (e.g. `workspace`, `backup`). */
  roots: string[];
  /** Its newest modification time, in seconds since the epoch. */
  newest: number;
}

/**
 * The tree a `--testbed` value puts at /: a tarball's top-level entries and newest time, or
 * `/testbed` at the fixed time of a packed directory; undefined for `none` or an empty tarball.
 */
export async function testbedTree(testbed: string = BUILTIN_TESTBED): Promise<TestbedTree | undefined> {
  if (testbed === 'none') return undefined;
  if ((await testbedKind(testbed)) === 'directory') return { roots: ['testbed'], newest: FIXED_MTIME.getTime() / 1000 };
  const roots = new Set<string>();
  let newest = -Infinity;
  const reader = extract();
  const done = new Promise<void>((resolve, reject) => {
    reader.on('entry', (header, stream, next) => {
      const root = header.name.replace(/^(\.?\/)+/, '').split('/')[0];
      if (root && root !== '.') roots.add(root);
      if (header.mtime) newest = Math.max(newest, Math.floor(header.mtime.getTime() / 1000));
      stream.on('end', next);
      stream.resume();
    });
    reader.on('finish', resolve);
    reader.on('error', reject);
  });
  reader.end(await readFile(testbed));
  await done;
  return roots.size > 0 ? { roots: [...roots].sort(), newest } : undefined;
}
