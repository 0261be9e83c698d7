import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { builtinDump, createSqlEnvs, DumpLoadError, ensureSqlImage, type SqlEnvOptions } from '../../envs/sql/index.js';
import { EngineSet } from '../../src/sandbox/backends/engine-set.js';
import { makeTempDir } from '../datasets/tmp-files.js';
import { dockerTestFile, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { sqlEnvBehaviour } from './env-behaviour.js';
import { builtinSqlImage, unlabelled } from '../setup/sql-image.js';

const { testRun, engine } = await dockerTestFile();


describe.skipIf(skipWithoutEngine(engine, 'SQL env on the MariaDB server'))('SQL env on the MariaDB server (Docker)', () => {
  beforeAll(async () => {
    requireEngine(engine);
    await builtinSqlImage(testRun);
  });

  sqlEnvBehaviour((options: Partial<SqlEnvOptions>, count: number) => createSqlEnvs(options, count), {
    neverEnding: "SELECT BENCHMARK(1000000000000, MD5('intercode'))",
    readOnlyError: /command denied to user 'ic_[0-9a-f]{16}'/,
  });

  it('groups come back in first-seen order as on MySQL 8 (no implicit GROUP BY sort), and a failing rewrite shows the original error', async () => {
    const [env] = await createSqlEnvs({}, 1);
    try {
      await env!.reset({ task: 0 });
      const rows = (sql: string) => env!.step(sql).then((r) => (r.info.result?.kind === 'rows' ? r.info.result.rows.map((row) => row[0]) : r.observation));
      const firstSeen = [...new Set(await rows('SELECT genre FROM book ORDER BY book_id'))];
      expect(firstSeen).not.toEqual([...firstSeen].sort());
      expect(await rows('SELECT genre, count(*) FROM book GROUP BY genre')).toEqual(firstSeen);
      expect(await rows('SELECT g FROM (SELECT genre AS g FROM book GROUP BY genre) AS d')).toEqual(firstSeen);
      expect(await rows('SELECT genre FROM book GROUP BY genre ORDER BY genre')).toEqual([...firstSeen].sort());
      const broken = await env!.step('SELECT genre FROM book GROUP BY genre HAVING'); // rewritten: "… HAVING ORDER BY NULL"
      expect(broken.observation).toMatch(/near '' at line 1/);
    } finally {
      await env!.close();
    }
  });

  it("ONLY_FULL_GROUP_BY as MySQL 8: a plain column beside an aggregate without GROUP BY fails, a functionally dependent one does not", async () => {
    const [env] = await createSqlEnvs({}, 1);
    try {
      await env!.reset({ task: 0 });
      const mixed = await env!.step('SELECT min(pages), title FROM book');
      expect(mixed.info.actionExecuted).toBe(false);
      expect(mixed.observation).toMatch(/^Error executing query: Mixing of GROUP columns/);
      // title depends on book_id (the key): MySQL 8 accepts it, MariaDB's own check would not.
      const dependent = await env!.step('SELECT book_id, title, count(*) FROM book JOIN copy USING (book_id) GROUP BY book_id ORDER BY book_id LIMIT 2');
      expect(dependent.observation).toBe("[(1, 'The Salt Road', 2), (2, 'Harbour Lights', 2)]");
    } finally {
      await env!.close();
    }
  });

  it('a statement parses the same in a fresh session and after a reset (no IGNORE_SPACE: `count (*)` fails as on MySQL 8)', async () => {
    const [env] = await createSqlEnvs({}, 1);
    try {
      await env!.reset({ task: 0 });
      const fresh = await env!.step('SELECT count (*) FROM book');
      await env!.step('SET @touched = 1');
      await env!.reset({ task: 0 });
      const afterReset = await env!.step('SELECT count (*) FROM book');
      expect(fresh.observation).toMatch(/^Error executing query: You have an error in your SQL syntax/);
      expect(afterReset.observation).toBe(fresh.observation);
    } finally {
      await env!.close();
    }
  });

  it('ties under ORDER BY … LIMIT give the same row every run, in every session, under concurrent load', async () => {
    const envs = await createSqlEnvs({}, 4);
    try {
      await Promise.all(envs.map((env) => env.reset({ task: 0 })));
      // Every group ties on the sort key: the server must still pick the same one each time.
      const sql = 'SELECT genre FROM book GROUP BY genre ORDER BY count(*) > 0 LIMIT 1';
      const seen = new Set<string>();
      for (let round = 0; round < 25; round++) {
        for (const step of await Promise.all(envs.map((env) => env.step(sql)))) seen.add(step.observation);
      }
      expect([...seen]).toHaveLength(1);
    } finally {
      await Promise.all(envs.map((env) => env.close()));
    }
  });

  it('a dump that fails to load stops the build with an error naming the dump and the line, and leaves no untagged image', async () => {
    const docker = requireEngine(engine);
    const untagged = async () => (await docker.listImages({ filters: JSON.stringify({ dangling: ['true'], label: ['io.intercode-ts.owner=intercode-ts'] }) })).map((image) => image.Id).sort();
    const before = await untagged();
    const { dir, remove } = await makeTempDir();
    const path = join(dir, 'broken.sql');
    await writeFile(path, 'CREATE DATABASE broken_db;\nUSE broken_db;\nCREATE TABL oops (x int);\n');
    try {
      const error = await unlabelled(testRun, async () => ensureSqlImage(EngineSet.local(), [await builtinDump(), { label: path, sql: Buffer.from('CREATE DATABASE broken_db;\nUSE broken_db;\nCREATE TABL oops (x int);\n') }], () => undefined)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DumpLoadError);
      expect((error as DumpLoadError).dump).toBe(path);
      expect((error as DumpLoadError).line).toBe(3);
      expect((error as Error).message).toMatch(/broken\.sql, line 3: failed to load: ERROR 1064/);
      await expect(unlabelled(testRun, () => createSqlEnvs({ dumps: [path] }, 1))).rejects.toThrow(/broken\.sql, line 3/);
      // The failed builds' finished steps (the dumps copied in) are not left as untagged images.
      expect(await untagged()).toEqual(before);
    } finally {
      await remove();
    }
  });
});
