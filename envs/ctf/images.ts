import { readFile } from 'node:fs/promises';
import type { ImageRecipe } from '../../src/images/recipe.js';
import { packagePath } from '../../src/package-path.js';

/** The CTF tool set on the project's base image; task files are copied in per episode, never baked in. */
export async function ctfRecipe(): Promise<ImageRecipe> {
  return { repository: 'intercode-ts/ctf', dockerfile: await readFile(packagePath('envs', 'ctf', 'Dockerfile'), 'utf8'), files: {}, parent: 'base', typicalBuildSeconds: 160 };
}
