import { ConfigError } from '../errors.js';

/** @returns the flag's value as a positive integer. @throws ConfigError naming the flag. */
export function positiveInteger(flag: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new ConfigError(flag, `must be a positive integer, got "${value}"`);
  return n;
}

/** @returns seconds as milliseconds, or undefined when the flag was not given. @throws ConfigError. */
export function timeoutMs(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (!(seconds > 0)) throw new ConfigError('--timeout', `must be a positive number of seconds, got "${value}"`);
  return seconds * 1000;
}
