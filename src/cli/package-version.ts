import { readFileSync } from 'node:fs';
import { packagePath } from '../package-path.js';

let version: string | undefined;

/** intercode-ts's version, from its package.json (ATIF's `agent.version`, the server's metadata); read once. */
export function packageVersion(): string {
  if (version === undefined) {
    const parsed = JSON.parse(readFileSync(packagePath('package.json'), 'utf8')) as { version?: unknown };
    version = typeof parsed.version === 'string' ? parsed.version : 'unknown';
  }
  return version;
}
