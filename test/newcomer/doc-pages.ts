/** The documentation the docs tests read: README.md and every page under docs/. */
import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../..');

/** README.md, then every `.md` under docs/ (depth first). */
export function docPages(): string[] {
  const found = [join(ROOT, 'README.md')];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(dir, entry.name));
      else if (entry.name.endsWith('.md')) found.push(join(dir, entry.name));
    }
  };
  walk(join(ROOT, 'docs'));
  return found;
}
