import { readFile, stat } from 'node:fs/promises';
import type { ImageRecipe } from '../../src/images/recipe.js';
import { directoryEntries, packEntries } from '../../src/images/tar.js';

import { packagePath } from '../../src/package-path.js';

const source = (name: string) => packagePath('envs', 'bash', name);

/** The project's own testbed, a tree shipped in datasets/bash/testbed. */
export const BUILTIN_TESTBED = packagePath('datasets', 'bash', 'testbed');

export async function bashRuntimeRecipe(): Promise<ImageRecipe> {
  return { repository: 'intercode-ts/bash', dockerfile: await readFile(source('Dockerfile'), 'utf8'), files: {}, parent: 'base' };
}

/**
 * The image for one testbed: a tarball (extracted at /, like InterCode's fs-N.tar) or a
 * directory (placed at /testbed, files owned by root, fixed times, only the x bit kept),
 * or `none` for no tree at all (InterCode's fs-4 system queries).
 */
export async function bashTestbedRecipe(testbed: string = BUILTIN_TESTBED): Promise<ImageRecipe> {
  const tar =
    testbed === 'none'
      ? await packEntries([])
      : (await stat(testbed)).isDirectory()
        ? await packEntries(await directoryEntries(testbed, 'testbed'))
        : await readFile(testbed);
  return {
    repository: 'intercode-ts/bash-testbed',
    dockerfile: await readFile(source('testbed.Dockerfile'), 'utf8'),
    files: { 'testbed.tar': tar, gitignore: await readFile(source('gitignore')) },
    parent: await bashRuntimeRecipe(),
  };
}
