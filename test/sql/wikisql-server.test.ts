/**
 * WikiSQL on the MariaDB server (Docker): a dump's non-ASCII names and cells load as the
 * UTF-8 they are, and InterCode's WikiSQL golds, converted by `intercode datasets
 * convert-wikisql`, score 1.0 through `intercode run sql` and each pick rows of the table.
 * The second part needs ../shared/intercode-data (reference data, not in the repository).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSqlEnvs, ensureSqlImage, readDumps } from '../../envs/sql/index.js';
import { EngineSet } from '../../src/sandbox/backends/engine-set.js';
import { makeTempDir } from '../datasets/tmp-files.js';
import { dockerTestFile, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { unlabelled } from '../setup/sql-image.js';

const { testRun, engine } = await dockerTestFile();
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const WIKISQL = resolve(ROOT, '../shared/intercode-data/sql/wikisql');


function runCli(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (status) => resolvePromise({ status, stdout, stderr }));
  });
}

// A column name and cells outside ASCII, as in WikiSQL's `%_growth_(2000–2008)` and Spider's 'Raúl Brown'.
const UTF8_DUMP = [
  'CREATE DATABASE IF NOT EXISTS `utf8check`;',
  'USE `utf8check`;',
  'CREATE TABLE `growth` (`Nation` text, `%_growth_(2000–2008)` double);',
  "INSERT INTO `growth` VALUES ('Curaçao', 3.5),('Raúl', 1.25);",
  '',
].join('\n');

describe.skipIf(skipWithoutEngine(engine, 'WikiSQL on the MariaDB server'))('WikiSQL on the MariaDB server (Docker)', () => {
  const made: string[] = [];
  let tmp: Awaited<ReturnType<typeof makeTempDir>>;
  beforeAll(async () => {
    requireEngine(engine);
    tmp = await makeTempDir();
  });
  afterAll(async () => {
    await tmp?.remove();
    // The fixture dump's image is this test's own; the WikiSQL dump's is the one `run sql --dump` makes for anyone.
    if (engine.ok) for (const tag of made) await engine.docker.getImage(tag).remove().catch(() => undefined);
  });

  it('a dump loads as UTF-8: a column named with an en dash is found by that name, and cells keep their accents', async () => {
    const dump = await tmp.write('utf8.sql', UTF8_DUMP);
    const tasks = await tmp.write('utf8.json', JSON.stringify([{ db: 'utf8check', query: 'q', gold: 'SELECT Nation FROM growth' }]));
    made.push(await unlabelled(testRun, async () => ensureSqlImage(EngineSet.local(), await readDumps([dump]), () => undefined)));
    const [env] = await createSqlEnvs({ data: tasks, dumps: [dump] }, 1);
    try {
      await env!.reset({ task: 0 });
      expect((await env!.step('SELECT `Nation` FROM `growth` WHERE `%_growth_(2000–2008)` > 2')).observation).toBe("[('Curaçao',)]");
      expect((await env!.step("SELECT `%_growth_(2000–2008)` FROM `growth` WHERE `Nation` = 'Raúl'")).observation).toBe('[(1.25,)]');
    } finally {
      await env!.close();
    }
  });

  it.skipIf(!existsSync(WIKISQL))("InterCode's 196 WikiSQL golds, converted, score 1.0 through `intercode run sql`, and each picks rows of its table", async () => {
    const converted = join(tmp.dir, 'wikisql_sql.json');
    const dump = join(WIKISQL, 'ic_wikisql_dev.sql');
    const convert = await runCli(['datasets', 'convert-wikisql', join(WIKISQL, 'ic_wikisql_dev.json'), '--dump', dump, '--out', converted, '--json']);
    expect(convert.stderr).toBe('');
    expect(JSON.parse(convert.stdout)).toMatchObject({ records: 196, converted: 196, unconverted: [] });
    const run = await runCli(['run', 'sql', '--data', converted, '--dump', dump, '--json']);
    expect(run.status, run.stderr).toBe(0);
    const summary = JSON.parse(run.stdout) as { episodes: number; solved: number; tasks: { index: number; reward: number }[] };
    expect(summary.tasks.filter((t) => t.reward < 0.995)).toEqual([]);
    expect([summary.episodes, summary.solved]).toEqual([196, 196]);
    // A gold that picked no row would score 1.0 too (empty against empty): each must pick one.
    const golds = (JSON.parse(await readFile(converted, 'utf8')) as { gold: string }[]).map((r) => r.gold);
    const [env] = await createSqlEnvs({ data: converted, dumps: [dump] }, 1);
    const empty: number[] = [];
    try {
      for (const [index, gold] of golds.entries()) {
        await env!.reset({ task: index });
        const result = (await env!.step(gold)).info.result;
        if (result?.kind !== 'rows' || !result.rows.some((row) => row.some((cell) => cell !== null))) empty.push(index);
      }
    } finally {
      await env!.close();
    }
    expect(empty).toEqual([]);
    // The convert, two servers over the WikiSQL databases, 196 episodes and 196 gold steps: 60 s was passed at load ~20.
  }, 600_000);
});
