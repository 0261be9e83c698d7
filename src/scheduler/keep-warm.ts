import { ConfigError } from '../errors.js';

/**
 * How long a command's clean pooled sandboxes stay warm after it ends, for the next command
 * of the same configuration to adopt (see docs/episode-scheduler.md), when `--keep-warm` is not
 * given: INTERCODE_KEEP_WARM (seconds), else 60 — long enough to carry a pool from one
 * command to the next one typed, short enough that nothing idles for long.
 */
export const DEFAULT_KEEP_WARM_SECONDS = 60;

/**
 * `--keep-warm`'s value (or INTERCODE_KEEP_WARM's, or the default) in milliseconds; 0 turns it off.
 * @throws ConfigError naming the flag or the variable.
 */
export function keepWarmMs(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): number {
  const [name, value] = flag !== undefined ? ['--keep-warm', flag] : env.INTERCODE_KEEP_WARM ? ['INTERCODE_KEEP_WARM', env.INTERCODE_KEEP_WARM] : [undefined, undefined];
  if (name === undefined || value === undefined) return DEFAULT_KEEP_WARM_SECONDS * 1000;
  const seconds = Number(value);
  if (value.trim() === '' || !Number.isFinite(seconds) || seconds < 0 || seconds > 86_400) {
    throw new ConfigError(name, `must be a number of seconds from 0 (off) to 86400, got "${value}"`);
  }
  return Math.round(seconds * 1000);
}
