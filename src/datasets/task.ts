/**
 * The task record every dataset format is normalised to, and its validation.
 */

import { DatasetError, type DataLocation } from '../errors.js';

/** One task of a dataset: a natural-language query and the reference solution. */
export interface Task {
  /** 0-based position of the record in its file. */
  index: number;
  /** The record's `task_id` (or else `id`) as a string; otherwise the key of a keyed JSON file; otherwise `String(index)`. */
  id: string;
  /** The natural-language request shown to the agent. */
  query: string;
  /** The reference solution: a command, a query, a program or a flag; a list of commands for some bash tasks. */
  gold: string | string[];
  /** Every other field of the record (`db`, `hardness`, `tests`, …), including `task_id`/`id`. */
  metadata: Record<string, unknown>;
}

/** The gold as one piece of text: a list's parts joined by `separator` (`;` for commands and queries, a newline for programs). */
export function goldText(task: Task, separator = ';'): string {
  return Array.isArray(task.gold) ? task.gold.join(separator) : task.gold;
}

/** Where a record came from: its 0-based position, and its location for error messages. */
export interface RecordSource {
  index: number;
  location: DataLocation;
  /** Fallback id when the record has neither `task_id` nor `id` (the key in a keyed JSON file). */
  key?: string;
}

function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value;
}

function fail(source: RecordSource, field: string | undefined, problem: string): never {
  const location = field === undefined ? source.location : { ...source.location, field };
  throw new DatasetError(location, problem);
}

function checkQuery(value: unknown, source: RecordSource): string {
  if (value === undefined) fail(source, 'query', 'missing');
  if (typeof value !== 'string') fail(source, 'query', `must be a string, got ${describeType(value)}`);
  if (value.trim() === '') fail(source, 'query', 'empty');
  return value;
}

function checkGold(value: unknown, source: RecordSource): string | string[] {
  if (value === undefined) fail(source, 'gold', 'missing');
  if (typeof value === 'string') {
    if (value.trim() === '') fail(source, 'gold', 'empty');
    return value;
  }
  if (!Array.isArray(value)) {
    fail(source, 'gold', `must be a string or an array of strings, got ${describeType(value)}`);
  }
  if (value.length === 0) fail(source, 'gold', 'empty');
  value.forEach((item: unknown, i) => {
    if (typeof item !== 'string' || item.trim() === '') {
      fail(source, 'gold', `element ${i + 1} must be a non-empty string, got ${describeType(item)}`);
    }
  });
  return value as string[];
}

function pickId(record: Record<string, unknown>, source: RecordSource): string {
  for (const field of ['task_id', 'id']) {
    const value = record[field];
    if (value === undefined || value === null) continue;
    if (typeof value === 'string' || typeof value === 'number') return String(value);
    fail(source, field, `must be a string or a number, got ${describeType(value)}`);
  }
  return source.key ?? String(source.index);
}

/**
 * Validates one parsed record and turns it into a {@link Task}.
 *
 * @returns the task; `metadata` holds every field except `query` and `gold`.
 * @throws DatasetError when the record is not an object, when `query` is missing, not a
 *   string or blank, when `gold` is missing, blank or not a string / array of non-empty
 *   strings, or when `task_id`/`id` is neither a string nor a number.
 */
export function toTask(record: unknown, source: RecordSource): Task {
  if (record === null || typeof record !== 'object' || Array.isArray(record)) {
    fail(source, undefined, `a record must be an object, got ${describeType(record)}`);
  }
  const fields = record as Record<string, unknown>;
  const query = checkQuery(fields.query, source);
  const gold = checkGold(fields.gold, source);
  const id = pickId(fields, source);
  const metadata: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(fields)) {
    if (name !== 'query' && name !== 'gold') metadata[name] = value;
  }
  return { index: source.index, id, query, gold, metadata };
}
