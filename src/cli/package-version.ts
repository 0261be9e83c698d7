import { readFileSync } from 'node:fs';
import { packagePath } from '../package-path.js';

/** intercode-ts's version, from its package.json (ATIF's `agent.version`). */
export function packageVersion(): string {
  const parsed = JSON.parse(readFileSync(packagePath('package.json'), 'utf8')) as { version?: unknown };
  return typeof parsed.version === 'string' ? parsed.version : 'unknown';
}
