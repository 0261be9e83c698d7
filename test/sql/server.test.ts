import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinDump, createSqlEnvs, DumpLoadError, ensureSqlImage, type SqlEnvOptions } from '../../envs/sql/index.js';
import { makeTempDir } from '../datasets/tmp-files.js';
import { probeEngine, removeTestContainers, requireEngine, skipWithoutEngine, startTestRun } from '../setup/docker.js';
import { sqlEnvBehaviour } from './env-behaviour.js';

const testRun = startTestRun();
const engine = await probeEngine();
afterAll(() => removeTestContainers(engine.ok ? engine.docker : undefined, testRun));

/** Images are built with the test label off (see buildImageUnlabelled in test/setup/docker.ts). */
async function unlabelled<T>(work: () => Promise<T>): Promise<T> {
  delete process.env.INTERCODE_TEST_RUN;
  try {
    return await work();
  } finally {
    process.env.INTERCODE_TEST_RUN = testRun;
  }
}

describe.skipIf(skipWithoutEngine(engine, 'SQL env on the MariaDB server'))('SQL env on the MariaDB server (Docker)', () => {
  beforeAll(async () => {
    const docker = requireEngine(engine);
    await unlabelled(async () => ensureSqlImage(docker, [await builtinDump()], (line) => console.log(`[image] ${line}`)));
  });

  sqlEnvBehaviour((options: Partial<SqlEnvOptions>, count: number) => createSqlEnvs(options, count), {
    neverEnding: "SELECT BENCHMARK(1000000000000, MD5('intercode'))",
    readOnlyError: /command denied to user 'intercode_ro'/,
  });

  it('a dump that fails to load stops the build with an error naming the dump and the line', async () => {
    const docker = requireEngine(engine);
    const { dir, remove } = await makeTempDir();
    const path = join(dir, 'broken.sql');
    await writeFile(path, 'CREATE DATABASE broken_db;\nUSE broken_db;\nCREATE TABL oops (x int);\n');
    try {
      const error = await unlabelled(async () => ensureSqlImage(docker, [await builtinDump(), { label: path, sql: Buffer.from('CREATE DATABASE broken_db;\nUSE broken_db;\nCREATE TABL oops (x int);\n') }], () => undefined)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DumpLoadError);
      expect((error as DumpLoadError).dump).toBe(path);
      expect((error as DumpLoadError).line).toBe(3);
      expect((error as Error).message).toMatch(/broken\.sql, line 3: failed to load: ERROR 1064/);
      await expect(unlabelled(() => createSqlEnvs({ dumps: [path] }, 1))).rejects.toThrow(/broken\.sql, line 3/);
    } finally {
      await remove();
    }
  });
});
