import { readFile } from 'node:fs/promises';
import type { ImageRecipe } from '../../src/images/recipe.js';
import { packagePath } from '../../src/package-path.js';

const source = (name: string) => packagePath('envs', 'python', name);

/** Where the image keeps the driver the host talks to. */
export const DRIVER_PATH = '/opt/intercode/driver.py';

/** python3 on the base image, plus the in-sandbox driver. */
export async function pythonRecipe(): Promise<ImageRecipe> {
  return {
    repository: 'intercode-ts/python',
    dockerfile: await readFile(source('Dockerfile'), 'utf8'),
    files: { 'driver.py': await readFile(source('driver.py')) },
    parent: 'base',
  };
}
