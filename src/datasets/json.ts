/**
 * JSON and JSON Lines dataset files.
 */

import { DatasetError, type DataLocation } from '../errors.js';
import { toTask, type Task } from './task.js';

/** Line and column (both 1-based) of a 0-based character offset in `text`. */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

/**
 * Parses JSON text, turning a `SyntaxError` into a {@link DatasetError} that says where.
 * V8 reports an offset for most syntax errors ("… in JSON at position 47"); the line and
 * column are computed from it. For the few messages without an offset ("Unexpected token
 * 'N', … is not valid JSON") only the reason is given. When `location.line` is set (JSON
 * Lines, where `text` is that one line) lines are counted from it.
 *
 * @throws DatasetError naming the line (and column) and V8's reason.
 */
export function parseJson(text: string, location: DataLocation): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    let offset: number | undefined;
    const match = / in JSON at position (\d+)/.exec(message);
    if (match) offset = Number(match[1]);
    else if (message.startsWith('Unexpected end of JSON input')) offset = text.length;
    // A binary file: say so, rather than quote its bytes.
    const binary = text.search(/[\u0000\ufffd]/);
    if (binary >= 0) {
      const where = lineAndColumn(text, binary);
      const line = (location.line ?? 1) + where.line - 1;
      throw new DatasetError({ ...location, line }, `not JSON text: binary data (column ${where.column})`, error);
    }
    let reason = message.replace(/ in JSON at position \d+.*$/s, '');
    reason = reason.replace(/, ".*"(\.\.\.)? is not valid JSON$/s, '');
    // eslint-disable-next-line no-control-regex
    reason = reason.replace(/[\x00-\x1f\x7f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
    if (offset === undefined) {
      throw new DatasetError(location, `malformed JSON: ${reason}`, error);
    }
    const where = lineAndColumn(text, offset);
    const line = (location.line ?? 1) + where.line - 1;
    throw new DatasetError({ ...location, line }, `malformed JSON (column ${where.column}): ${reason}`, error);
  }
}

function describeTopLevel(value: unknown): string {
  if (value === null) return 'null';
  return Array.isArray(value) ? 'an array' : typeof value;
}

/**
 * Reads an InterCode JSON dataset: a list of records, or an object keyed by record index
 * (`{"0": {...}, "1": {...}}`, taken in numeric key order; the key is the fallback id).
 *
 * @returns the tasks in file order (possibly empty: the caller decides about that).
 * @throws DatasetError for malformed JSON, a top level that is neither a list nor an
 *   object, a key that is not a non-negative integer, or an invalid record.
 */
export function parseJsonDataset(text: string, file: string): Task[] {
  const data = parseJson(text, { file });
  if (Array.isArray(data)) {
    return data.map((record, index) => toTask(record, { index, location: { file, record: index + 1 } }));
  }
  if (data === null || typeof data !== 'object') {
    throw new DatasetError(
      { file },
      `must be a list of records or an object keyed by record index, got ${describeTopLevel(data)}`,
    );
  }
  const entries = Object.entries(data as Record<string, unknown>);
  for (const [key] of entries) {
    if (!/^(0|[1-9]\d*)$/.test(key)) {
      throw new DatasetError({ file }, `an object dataset must be keyed by record index, got key "${key}"`);
    }
  }
  entries.sort(([a], [b]) => Number(a) - Number(b));
  return entries.map(([key, record], index) =>
    toTask(record, { index, key, location: { file, record: index + 1 } }),
  );
}

/**
 * Reads a JSON Lines dataset: one record per line; blank lines are skipped and do not
 * count as records (but do count as lines in messages).
 *
 * @returns the tasks in file order.
 * @throws DatasetError naming line and record for malformed JSON or an invalid record.
 */
export function parseJsonlDataset(text: string, file: string): Task[] {
  const tasks: Task[] = [];
  const lines = text.split('\n');
  lines.forEach((raw, i) => {
    const content = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (content.trim() === '') return;
    const location = { file, line: i + 1, record: tasks.length + 1 };
    const record = parseJson(content, location);
    tasks.push(toTask(record, { index: tasks.length, location }));
  });
  return tasks;
}
