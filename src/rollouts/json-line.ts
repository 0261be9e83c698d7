/**
 * JSON Lines both ways: text in which the numbers under chosen keys are written as floats
 * (`1.0`, not `1`), so a JSON Lines loader (Hugging Face `datasets`, pandas) never infers
 * an integer column for rewards that happen to be whole; and a file's lines read back.
 */

import { readFileSync } from 'node:fs';
import { TrajectoryError } from '../errors.js';

const float = (x: number) => (Number.isInteger(x) ? x.toFixed(1) : JSON.stringify(x));

/** `value` as one line of JSON; numbers under a key in `floatKeys` (directly or in lists) are written as floats. */
export function jsonLine(value: unknown, floatKeys: ReadonlySet<string>): string {
  return write(value, false, floatKeys);
}

function write(value: unknown, asFloat: boolean, floatKeys: ReadonlySet<string>): string {
  if (typeof value === 'number') return asFloat && Number.isFinite(value) ? float(value) : JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v) => write(v, asFloat, floatKeys)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const parts = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${JSON.stringify(k)}:${write(v, floatKeys.has(k), floatKeys)}`);
    return `{${parts.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Keys whose numbers are floats in every format written here. */
export const FLOAT_KEYS: ReadonlySet<string> = new Set(['reward', 'rewards', 'group_rewards', 'advantage', 'mean', 'std', 'temperature', 'logprobs', 'token_logprobs']);

/** One parsed line of a JSON Lines file, with its 1-based line number. */
export interface JsonLine {
  value: unknown;
  line: number;
}

/**
 * The non-blank lines of `file`, each parsed.
 * @throws TrajectoryError naming the file (unreadable) or the file and line (not JSON).
 */
export function readJsonLines(file: string): JsonLine[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new TrajectoryError({ file }, `cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`, error);
  }
  const lines: JsonLine[] = [];
  text.split('\n').forEach((raw, i) => {
    if (raw.trim() === '') return;
    try {
      lines.push({ value: JSON.parse(raw), line: i + 1 });
    } catch (error) {
      throw new TrajectoryError({ file, line: i + 1 }, `not valid JSON (${(error as Error).message})`, error);
    }
  });
  return lines;
}
