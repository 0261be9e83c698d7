import { join } from 'node:path';
import initSqlJs from 'sql.js';
import { describe, expect, it } from 'vitest';
import { BUILTIN_SQL_SCRIPT, BUILTIN_SQL_TASKS, createSqlEnvs } from '../../envs/sql/index.js';
import { readFile, writeFile } from 'node:fs/promises';
import { DatasetError } from '../../src/errors.js';
import { makeTempDir } from '../datasets/tmp-files.js';
import { sqlEnvBehaviour } from './env-behaviour.js';

describe('SQL env on the embedded SQLite backend (sql.js, no Docker)', () => {
  sqlEnvBehaviour((options, count) => createSqlEnvs({ ...options, embedded: true }, count), {
    neverEnding: 'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r',
    readOnlyError: /readonly/i,
  });

  it('opens .sqlite files named after the file, and rejects files that are not SQLite', async () => {
    const { dir, remove } = await makeTempDir();
    const SQL = await initSqlJs();
    const db = new SQL.Database();
    db.run(await readFile(BUILTIN_SQL_SCRIPT, 'utf8'));
    const path = join(dir, 'library.sqlite');
    await writeFile(path, db.export());
    db.close();
    const [env] = await createSqlEnvs({ sqlite: [path], data: BUILTIN_SQL_TASKS }, 1);
    try {
      await env!.reset({ task: 1 });
      await env!.step(env!.tasks[1]!.gold as string);
      expect((await env!.step('submit')).reward).toBe(1);
    } finally {
      await env!.close();
    }
    const bogus = join(dir, 'bogus.sqlite');
    await writeFile(bogus, 'not a database at all');
    await expect(createSqlEnvs({ sqlite: [bogus] }, 1)).rejects.toThrow(DatasetError);
    await remove();
  });
});
