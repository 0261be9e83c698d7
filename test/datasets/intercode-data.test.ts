/**
 * Loads every InterCode task file listed in ../shared/intercode-data/README.md. The folder
 * is reference data that is not part of the repository: without it these cases skip.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadDataset } from '../../src/datasets/index.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const dataRoot = resolve(repoRoot, '../shared/intercode-data');
const present = existsSync(dataRoot);
if (!present) console.warn(`skipping InterCode task files: ${dataRoot} does not exist`);

// File → record count from the README's table; `undefined` means "see file" there, so the
// count is taken from the JSON list itself.
const TASK_FILES: [string, number | undefined][] = [
  ['nl2bash/nl2bash_fs_1.json', 60],
  ['nl2bash/nl2bash_fs_2.json', 53],
  ['nl2bash/nl2bash_fs_3.json', 60],
  ['nl2bash/nl2bash_fs_4.json', 27],
  ['nl2bash/test_queries.json', 24],
  ['sql/spider/ic_spider_dev.json', 1034],
  ['sql/wikisql/ic_wikisql_dev.json', undefined],
  ['sql/bird/ic_bird.json', undefined],
  ['python/mbpp/ic_mbpp.json', undefined],
  ['ctf/ic_ctf.json', 100],
];

describe.skipIf(!present)('InterCode task files (reference data)', () => {
  it.each(TASK_FILES)('%s loads with the expected record count', async (relative, count) => {
    const file = join(dataRoot, relative);
    const tasks = await loadDataset(file);
    const expected = count ?? (JSON.parse(await readFile(file, 'utf8')) as unknown[]).length;
    expect(tasks).toHaveLength(expected);
    expect(tasks.map((t) => t.index)).toEqual([...Array(expected).keys()]);
  });

  it('keeps the extra fields as metadata and task_id as id', async () => {
    const spider = await loadDataset(join(dataRoot, 'sql/spider/ic_spider_dev.json'));
    expect(Object.keys(spider[0]!.metadata).sort()).toEqual(['db', 'db_tables', 'hardness']);
    const mbpp = await loadDataset(join(dataRoot, 'python/mbpp/ic_mbpp.json'));
    expect(mbpp[0]!.id).toBe(String(mbpp[0]!.metadata.task_id));
    expect(mbpp[0]!.metadata).toHaveProperty('tests');
  });
});
