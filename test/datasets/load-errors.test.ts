import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDataset } from '../../src/datasets/index.js';
import { DatasetError } from '../../src/errors.js';
import { makeTempDir } from './tmp-files.js';

let tmp: Awaited<ReturnType<typeof makeTempDir>>;
beforeAll(async () => {
  tmp = await makeTempDir();
});
afterAll(async () => {
  await tmp.remove();
});

async function errorOf(name: string, content: string): Promise<{ file: string; error: DatasetError }> {
  const file = await tmp.write(name, content);
  const error = await loadDataset(file).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof DatasetError)) throw new Error(`expected a DatasetError, got ${String(error)}`);
  expect(error.code).toBe('DATASET_INVALID');
  return { file, error };
}

const ok = '{"query": "q", "gold": "g"}';

// [file name, content, expected message after "<path>"]
const CASES: [string, string, string][] = [
  ['jl-gold.jsonl', `${ok}\n\n${ok}\n${ok}\n${ok}\n${ok}\n{"query": "q"}\n`, ', line 7, record 6, field "gold": missing'],
  ['jl-query.jsonl', '{"gold": "g"}', ', line 1, record 1, field "query": missing'],
  ['jl-query-type.jsonl', '{"query": 3, "gold": "g"}', ', line 1, record 1, field "query": must be a string, got number'],
  ['jl-query-blank.jsonl', '{"query": "  ", "gold": "g"}', ', line 1, record 1, field "query": empty'],
  ['jl-gold-blank.jsonl', '{"query": "q", "gold": ""}', ', line 1, record 1, field "gold": empty'],
  ['jl-gold-list.jsonl', '{"query": "q", "gold": []}', ', line 1, record 1, field "gold": empty'],
  ['jl-gold-type.jsonl', '{"query": "q", "gold": {"a": 1}}',
    ', line 1, record 1, field "gold": must be a string or an array of strings, got object'],
  ['jl-gold-item.jsonl', '{"query": "q", "gold": ["ls", 5]}',
    ', line 1, record 1, field "gold": element 2 must be a non-empty string, got number'],
  ['jl-id.jsonl', '{"query": "q", "gold": "g", "task_id": [1]}',
    ', line 1, record 1, field "task_id": must be a string or a number, got an array'],
  ['jl-not-object.jsonl', '[1, 2]', ', line 1, record 1: a record must be an object, got an array'],
  ['jl-malformed.jsonl', `${ok}\n{"query": "q" "gold": "g"}\n`,
    ', line 2, record 2: malformed JSON (column 15): Expected \',\' or \'}\' after property value'],
  ['list-record.json', `[${ok}, ${ok}, {"query": "q", "gold": null}]`,
    ', record 3, field "gold": must be a string or an array of strings, got null'],
  ['list-not-object.json', `[${ok}, "ls"]`, ', record 2: a record must be an object, got string'],
  ['malformed.json', '[\n  {"query": "a", "gold": "b"},\n  {"query": "c",, "gold": "d"}\n]',
    ', line 3: malformed JSON (column 17): Expected double-quoted property name'],
  ['truncated.json', '[\n  {"query": "a"', ', line 2: malformed JSON (column 16): Expected \',\' or \'}\' after property value'],
  ['no-position.json', '[NaN]', ': malformed JSON: Unexpected token \'N\''],
  ['empty-text.json', '', ', line 1: malformed JSON (column 1): Unexpected end of JSON input'],
  ['top-level.json', '"hello"', ': must be a list of records or an object keyed by record index, got string'],
  ['bad-key.json', '{"0": {"query": "q", "gold": "g"}, "one": {}}', ': an object dataset must be keyed by record index, got key "one"'],
  ['keyed-record.json', '{"0": {"query": "q"}}', ', record 1, field "gold": missing'],
  ['empty-list.json', '[]', ': the dataset has no records'],
  ['empty.jsonl', '\n\n', ': the dataset has no records'],
  ['empty.csv', '', ': the dataset has no records'],
  ['header-only.csv', 'query,gold\n', ': the dataset has no records'],
  ['no-gold.csv', 'query,answer\nq,a\n', ', line 1, field "gold": missing from the header row'],
  ['dup-header.csv', 'query,gold,query\nq,g,q\n', ', line 1: header names column "query" twice'],
  ['unnamed-header.tsv', 'query\tgold\t\nq\tg\tx\n', ', line 1: header column 3 has no name'],
  ['csv-gold.csv', 'query,gold\nq,g\n\n"multi\nline",\n', ', line 4, record 2, field "gold": empty'],
  ['csv-fields.csv', 'query,gold\nq,g\nq,g,extra\n', ', line 3, record 2: expected 2 fields like the header row, got 3'],
  ['csv-quote.csv', 'query,gold\nq,g\nq,"open\n', ', line 3, record 2: malformed CSV: Quote Not Closed: the parsing is finished with an opening quote at line 3'],
  ['tsv-query.tsv', 'query\tgold\nq\tg\n\tg\n', ', line 3, record 2, field "query": empty'],
  ['tsv-fields.tsv', 'query\tgold\nq\n', ', line 2, record 1: expected 2 fields like the header row, got 1'],
];

describe('loadDataset: error messages', () => {
  it.each(CASES)('%s', async (name, content, expected) => {
    const { file, error } = await errorOf(name, content);
    expect(error.message).toBe(`${file}${expected}`);
    expect(error.location.file).toBe(file);
  });

  it('names the field in the structured location', async () => {
    const { error } = await errorOf('structured.jsonl', `${ok}\n{"query": "q"}`);
    expect(error.location).toEqual({ file: error.location.file, line: 2, record: 2, field: 'gold' });
    expect(error.details).toMatchObject({ line: 2, record: 2, field: 'gold', problem: 'missing' });
  });

  it('rejects an unknown extension, listing the supported ones', async () => {
    const { file, error } = await errorOf('data.txt', ok);
    expect(error.message).toBe(`${file}: unsupported extension ".txt"; supported: .json, .jsonl, .csv, .tsv`);
    const bare = await errorOf('datafile', ok);
    expect(bare.error.message).toBe(`${bare.file}: no extension; supported: .json, .jsonl, .csv, .tsv`);
  });

  it('reports a file that cannot be read, with the cause', async () => {
    const file = join(tmp.dir, 'missing.json');
    const error = await loadDataset(file).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DatasetError);
    expect((error as DatasetError).message).toBe(`${file}: cannot read the file (ENOENT)`);
    expect((error as DatasetError).cause).toBeInstanceOf(Error);
  });
});
