import { readFile } from 'node:fs/promises';
import type { ImageRecipe } from '../../src/images/recipe.js';
import { packagePath } from '../../src/package-path.js';

const source = (name: string) => packagePath('envs', 'python', name);

/** The files' texts joined as one program (read once). */
const once = (...names: string[]) => {
  let text: Promise<Buffer> | undefined;
  return () => (text ??= Promise.all(names.map((name) => readFile(source(name)))).then((parts) => Buffer.concat(parts)));
};

/** The agent's interpreter (envs/python/driver.py after the shared helpers), sent over stdin at each start: no file in the image an agent could replace. */
export const DRIVER_SOURCE = once('sandbox_common.py', 'driver.py');
/** The scorer (envs/python/scorer.py after the shared helpers and the test checkers), sent over stdin into a new sandbox at each score. */
export const SCORER_SOURCE = once('sandbox_common.py', 'checked_values.py', 'scorer.py');

/** python3 on the base image; the programs the host runs in it come over stdin. */
export async function pythonRecipe(): Promise<ImageRecipe> {
  return {
    repository: 'intercode-ts/python',
    dockerfile: await readFile(source('Dockerfile'), 'utf8'),
    files: {},
    parent: 'base',
    typicalBuildSeconds: 5,
  };
}
