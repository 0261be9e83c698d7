import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

/**
 * Absolute path of a file shipped with the package (Dockerfiles, built-in datasets),
 * the same whether the code runs from `src/` (tests) or from the compiled `dist/`.
 */
export function packagePath(...parts: string[]): string {
  if (!root) {
    let dir = dirname(fileURLToPath(import.meta.url));
    while (!existsSync(join(dir, 'package.json'))) {
      const parent = dirname(dir);
      if (parent === dir) throw new Error('package.json not found above ' + fileURLToPath(import.meta.url));
      dir = parent;
    }
    root = dir;
  }
  return join(root, ...parts);
}
