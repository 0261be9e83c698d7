import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError } from '../src/errors.js';

/** What a bench's options parse to: each option's text (string options) or presence (boolean ones). */
export type BenchArgValues = Record<string, string | boolean | undefined>;

/** node:util parseArgs messages, as ConfigErrors that name the option. */
function describeParseError(bench: string, message: string): ConfigError {
  const quoted = /'([^']*)'/.exec(message)?.[1];
  const option = quoted?.split(' ')[0] ?? 'arguments';
  if (message.startsWith('Unexpected argument')) return new ConfigError(`"${option}"`, `is not an option (the ${bench} bench takes no positional arguments)`);
  if (message.startsWith('Unknown option')) return new ConfigError(option, `is not an option of the ${bench} bench`);
  if (message.includes('ambiguous') || message.includes('missing')) {
    return new ConfigError(option, `needs a value (write ${option}=VALUE for a value that starts with "-")`);
  }
  return new ConfigError(option, message.replace(/^Option '[^']*' /, '').split('. ')[0]!);
}

/**
 * Parses a bench's arguments strictly (no positionals); `--json` and `-h/--help` are
 * added to `options`.
 * @returns the values, or "help" when --help was given.
 * @throws ConfigError naming an unknown option or one without its value.
 */
export function parseBenchArgs(bench: string, args: readonly string[], options: NonNullable<ParseArgsConfig['options']>): BenchArgValues | 'help' {
  let values: BenchArgValues;
  try {
    ({ values } = parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: false,
      options: { ...options, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    }) as { values: BenchArgValues });
  } catch (error) {
    throw describeParseError(bench, (error as Error).message);
  }
  return values.help ? 'help' : values;
}

/**
 * `text` as a positive number (an integer when `integer`), or `fallback` when not given.
 * @throws ConfigError naming `option`.
 */
export function positiveNumber(option: string, text: string | boolean | undefined, fallback: number, integer: boolean): number {
  if (text === undefined || typeof text === 'boolean') return fallback;
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw new ConfigError(option, `must be a positive ${integer ? 'integer' : 'number'} (got "${text}")`);
  }
  return value;
}
