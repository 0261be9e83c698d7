import { readFile } from 'node:fs/promises';
import type { ImageRecipe } from '../../src/images/recipe.js';
import { packagePath } from '../../src/package-path.js';

const source = (name: string) => packagePath('envs', 'python', name);

const once = (name: string) => {
  let text: Promise<Buffer> | undefined;
  return () => (text ??= readFile(source(name)));
};

/** The agent's interpreter (envs/python/driver.py), sent over stdin at each start: no file in the image an agent could replace. */
export const DRIVER_SOURCE = once('driver.py');
/** The scorer (envs/python/scorer.py), sent over stdin into a new sandbox at each score. */
export const SCORER_SOURCE = once('scorer.py');

/** python3 on the base image; the programs the host runs in it come over stdin. */
export async function pythonRecipe(): Promise<ImageRecipe> {
  return {
    repository: 'intercode-ts/python',
    dockerfile: await readFile(source('Dockerfile'), 'utf8'),
    files: {},
    parent: 'base',
  };
}
