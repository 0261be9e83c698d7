/**
 * CSV and TSV dataset files, parsed with csv-parse.
 *
 * - The first row is the header; it must name `query` and `gold`. Every other column goes
 *   to `metadata`. Blank lines are skipped.
 * - CSV follows RFC 4180: fields may be quoted with `"`, a quoted field may span lines
 *   and `""` is a literal quote.
 * - TSV has no quoting at all: a field is the literal text between tabs, so commands
 *   full of quotes need no escaping; a field cannot contain a tab or a newline.
 * - Every cell is a string. A `gold` cell holding a JSON array (`["ls", "pwd"]`) stays
 *   that string; use a JSON or JSON Lines file for list golds.
 */

import { CsvError, parse } from 'csv-parse/sync';
import { DatasetError } from '../errors.js';
import { toTask, type Task } from './task.js';

/** The two delimited formats and their parser settings. */
export type DelimitedFormat = 'csv' | 'tsv';

interface ParsedRow {
  record: string[];
  info: { lines: number; empty_lines: number };
}

function parseRows(text: string, file: string, format: DelimitedFormat): ParsedRow[] {
  const options =
    format === 'csv'
      ? { bom: true, info: true as const, skip_empty_lines: true }
      : { bom: true, info: true as const, skip_empty_lines: true, delimiter: '\t', quote: false as const };
  try {
    return parse(text, options) as unknown as ParsedRow[];
  } catch (error) {
    if (!(error instanceof CsvError)) throw error;
    const details = error as CsvError & { lines?: number; records?: number };
    // csv-parse counts the header as a record, so `records` (the rows completed before
    // the bad one) is also the 1-based number of the bad data row.
    const location = { file, line: details.lines, record: details.records };
    if (details.code === 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH') {
      const got = Array.isArray(details.record) ? details.record.length : '?';
      throw new DatasetError(location, `expected ${headerLength(error)} fields like the header row, got ${got}`, error);
    }
    throw new DatasetError(location, `malformed ${format.toUpperCase()}: ${error.message}`, error);
  }
}

function headerLength(error: CsvError): number | string {
  const match = /expect (\d+)/.exec(error.message);
  return match ? Number(match[1]) : '?';
}

function checkHeader(header: string[], file: string, line: number): void {
  const seen = new Set<string>();
  header.forEach((name, i) => {
    if (name.trim() === '') throw new DatasetError({ file, line }, `header column ${i + 1} has no name`);
    if (seen.has(name)) throw new DatasetError({ file, line }, `header names column "${name}" twice`);
    seen.add(name);
  });
  for (const field of ['query', 'gold']) {
    if (!seen.has(field)) throw new DatasetError({ file, line, field }, 'missing from the header row');
  }
}

/**
 * Reads a CSV or TSV dataset (see the module notes for the rules).
 *
 * @returns the tasks in file order; `line` in error messages is the line where the
 *   record starts (a quoted CSV field may span several lines).
 * @throws DatasetError for a malformed file (unclosed quote, a row whose field count
 *   differs from the header's), a bad header (missing `query`/`gold`, unnamed or
 *   repeated columns) or an invalid record (see {@link toTask}).
 */
export function parseDelimitedDataset(text: string, file: string, format: DelimitedFormat): Task[] {
  const rows = parseRows(text, file, format);
  if (rows.length === 0) return [];
  const [headerRow, ...dataRows] = rows as [ParsedRow, ...ParsedRow[]];
  const header = headerRow.record;
  checkHeader(header, file, headerRow.info.lines);
  let previous = headerRow.info;
  return dataRows.map((row, index) => {
    const line = previous.lines + 1 + (row.info.empty_lines - previous.empty_lines);
    previous = row.info;
    const record: Record<string, string> = {};
    header.forEach((name, i) => {
      record[name] = row.record[i] ?? '';
    });
    return toTask(record, { index, location: { file, line, record: index + 1 } });
  });
}
