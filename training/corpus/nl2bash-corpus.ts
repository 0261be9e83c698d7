/**
 * The NL2Bash corpus shipped in datasets/nl2bash-corpus (MIT; see its README): 12,607
 * description/command pairs, read from gzip-compressed JSON Lines.
 */
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { DatasetError } from '../../src/errors.js';
import { packagePath } from '../../src/package-path.js';
import type { TextPair } from './near-duplicates.js';

export const NL2BASH_CORPUS = packagePath('datasets', 'nl2bash-corpus', 'pairs.jsonl.gz');

/** @throws DatasetError when a line is not a `{"description","command"}` object of strings. */
export function loadCorpus(path = NL2BASH_CORPUS): TextPair[] {
  const lines = gunzipSync(readFileSync(path)).toString('utf8').split('\n').filter(Boolean);
  return lines.map((line, i) => {
    let pair: Partial<TextPair>;
    try {
      pair = JSON.parse(line) as Partial<TextPair>;
    } catch (cause) {
      throw new DatasetError({ file: path, line: i + 1 }, 'is not JSON', cause);
    }
    if (typeof pair.description !== 'string' || typeof pair.command !== 'string') throw new DatasetError({ file: path, line: i + 1 }, 'is not a {"description","command"} object of strings');
    return { description: pair.description, command: pair.command };
  });
}
