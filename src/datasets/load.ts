/**
 * `loadDataset`: reads a task file of any supported format.
 */

import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { DatasetError } from '../errors.js';
import { parseDelimitedDataset } from './delimited.js';
import { parseJsonDataset, parseJsonlDataset } from './json.js';
import type { Task } from './task.js';

type Parser = (text: string, file: string) => Task[];

const PARSERS: Readonly<Record<string, Parser>> = {
  '.json': parseJsonDataset,
  '.jsonl': parseJsonlDataset,
  '.csv': (text, file) => parseDelimitedDataset(text, file, 'csv'),
  '.tsv': (text, file) => parseDelimitedDataset(text, file, 'tsv'),
};

/** The file extensions {@link loadDataset} understands. */
export const SUPPORTED_DATASET_EXTENSIONS: readonly string[] = Object.keys(PARSERS);

/**
 * Loads a task dataset, choosing the format by the file's extension (case-insensitive):
 *
 * - `.json`: InterCode's format, a list of records (or an object keyed by record index);
 * - `.jsonl`: one JSON record per line;
 * - `.csv` / `.tsv`: a header row naming at least `query` and `gold` (cells are strings).
 *
 * Every record needs a non-empty string `query` and a `gold` that is a non-empty string or
 * a non-empty list of non-empty strings; every other field lands in `metadata`.
 *
 * @param path the file to read; messages name it as given.
 * @returns the tasks in file order, `index` 0-based.
 * @throws DatasetError for an unknown extension (listing the supported ones), an
 *   unreadable file, malformed content (with line and column where known), an invalid
 *   record (naming record number, line for line-based formats, and field), or a file
 *   with no records.
 */
export async function loadDataset(path: string): Promise<Task[]> {
  const extension = extname(path).toLowerCase();
  const parser = PARSERS[extension];
  if (parser === undefined) {
    const shown = extension === '' ? 'no extension' : `unsupported extension "${extension}"`;
    throw new DatasetError(
      { file: path },
      `${shown}; supported: ${SUPPORTED_DATASET_EXTENSIONS.join(', ')}`,
    );
  }
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
    throw new DatasetError({ file: path }, `cannot read the file (${code})`, error);
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const tasks = parser(text, path);
  if (tasks.length === 0) throw new DatasetError({ file: path }, 'the dataset has no records');
  return tasks;
}
