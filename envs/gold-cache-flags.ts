import { defaultGoldCacheDir } from '../src/golds/index.js';
import type { EnvFlag } from './plugin.js';

/**
 * The gold-cache flags of the envs whose golds are verified once and kept on disk (bash,
 * sql): each lists them among its own, and the CLI adds an option once however many do.
 */
export const GOLD_CACHE_FLAGS: readonly EnvFlag[] = [
  { flags: '--no-gold-cache', description: 'bash, sql: run the gold command afresh for every score (no memory or disk cache)' },
  {
    flags: '--gold-cache-dir <dir>',
    description: `bash, sql: where golds verified deterministic (two clean runs agreed) are kept, keyed by image, env options and task, so later runs trust them without running them (default: ${defaultGoldCacheDir()})`,
    changesResults: false,
  },
];
