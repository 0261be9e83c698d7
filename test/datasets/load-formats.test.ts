import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDataset, type Task } from '../../src/datasets/index.js';
import { makeTempDir } from './tmp-files.js';

let tmp: Awaited<ReturnType<typeof makeTempDir>>;
beforeAll(async () => {
  tmp = await makeTempDir();
});
afterAll(async () => {
  await tmp.remove();
});

describe('loadDataset: the supported formats', () => {
  it('reads an InterCode JSON list, keeping other fields as metadata', async () => {
    const file = await tmp.write(
      'list.json',
      JSON.stringify([
        { query: 'Count files', gold: 'ls | wc -l' },
        { query: 'Two steps', gold: ['cd /a', 'ls'], db: 'x', task_id: 7 },
        { query: 'By id', gold: 'g', id: 'abc' },
      ]),
    );
    const tasks = await loadDataset(file);
    expect(tasks).toEqual<Task[]>([
      { index: 0, id: '0', query: 'Count files', gold: 'ls | wc -l', metadata: {} },
      { index: 1, id: '7', query: 'Two steps', gold: ['cd /a', 'ls'], metadata: { db: 'x', task_id: 7 } },
      { index: 2, id: 'abc', query: 'By id', gold: 'g', metadata: { id: 'abc' } },
    ]);
  });

  it('reads a JSON object keyed by index, in numeric key order, the key as fallback id', async () => {
    const file = await tmp.write(
      'keyed.json',
      JSON.stringify({ '10': { query: 'q10', gold: 'g10' }, '2': { query: 'q2', gold: 'g2' } }),
    );
    const tasks = await loadDataset(file);
    expect(tasks.map((t) => [t.index, t.id, t.query])).toEqual([
      [0, '2', 'q2'],
      [1, '10', 'q10'],
    ]);
  });

  it('reads JSON Lines, skipping blank lines and CRLF endings', async () => {
    const file = await tmp.write(
      'data.jsonl',
      '{"query": "a", "gold": "1"}\r\n\n{"query": "b", "gold": ["2", "3"], "hardness": "easy"}\n',
    );
    const tasks = await loadDataset(file);
    expect(tasks).toEqual<Task[]>([
      { index: 0, id: '0', query: 'a', gold: '1', metadata: {} },
      { index: 1, id: '1', query: 'b', gold: ['2', '3'], metadata: { hardness: 'easy' } },
    ]);
  });

  it('reads CSV with quoted fields, multi-line fields, a BOM and extra columns', async () => {
    const file = await tmp.write(
      'data.csv',
      '\ufeffquery,gold,difficulty\n"Say ""hi""","echo ""hi""",easy\n\n"two\nlines",ls,hard\n',
    );
    const tasks = await loadDataset(file);
    expect(tasks).toEqual<Task[]>([
      { index: 0, id: '0', query: 'Say "hi"', gold: 'echo "hi"', metadata: { difficulty: 'easy' } },
      { index: 1, id: '1', query: 'two\nlines', gold: 'ls', metadata: { difficulty: 'hard' } },
    ]);
  });

  it('reads TSV literally (no quoting); a JSON-array gold cell stays a string', async () => {
    const file = await tmp.write(
      'data.tsv',
      'task_id\tquery\tgold\nt1\tFind "x"\tgrep -r "x" .\nt2\tTwo\t["cd /", "ls"]\n',
    );
    const tasks = await loadDataset(file);
    expect(tasks).toEqual<Task[]>([
      { index: 0, id: 't1', query: 'Find "x"', gold: 'grep -r "x" .', metadata: { task_id: 't1' } },
      { index: 1, id: 't2', query: 'Two', gold: '["cd /", "ls"]', metadata: { task_id: 't2' } },
    ]);
  });

  it('chooses the format by extension case-insensitively', async () => {
    const file = await tmp.write('UPPER.JSON', '[{"query": "q", "gold": "g"}]');
    expect(await loadDataset(file)).toHaveLength(1);
  });
});
