/**
 * `intercode datasets convert-wikisql` as a user runs it (the CLI from source, no Docker):
 * the file it writes, its report in text and in JSON, and its errors.
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir } from '../datasets/tmp-files.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function runCli(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), ...args], {
      cwd: ROOT,
      env: { ...process.env, INTERCODE_DEBUG: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

const DUMP = [
  'CREATE DATABASE IF NOT EXISTS `dev`;',
  'USE `dev`;',
  'CREATE TABLE `t_1` (`id_fake` int NOT NULL AUTO_INCREMENT, `Player` text, `No.` text, `Score` text, `Year` int, PRIMARY KEY (`id_fake`));',
  "INSERT INTO `t_1` VALUES (1, 'Ana', '3', 'W 9891', 2003),(2, 'Rui', '21', 'L 1-2', 2005);",
  '',
].join('\n');

const TASKS = [
  { db: 'dev', query: 'Who wears 3?', gold: 'SELECT Player FROM t_1 WHERE No. = 3' },
  { db: 'dev', query: 'How many years?', gold: 'SELECT COUNT Year FROM t_1 WHERE Score = W 98–91' },
  { db: 'dev', query: 'Height?', gold: 'SELECT Height FROM t_1 WHERE Player = Ana' },
];

let tmp: Awaited<ReturnType<typeof makeTempDir>>;
let dump: string;
let tasks: string;
beforeAll(async () => {
  tmp = await makeTempDir();
  dump = await tmp.write('dump.sql', DUMP);
  tasks = await tmp.write('tasks.json', JSON.stringify(TASKS));
});
afterAll(() => tmp.remove());

describe('intercode datasets convert-wikisql', () => {
  it('writes every record in order (SQL golds, the unconverted one as it was) and reports in JSON', async () => {
    const out = join(tmp.dir, 'out.json');
    const { status, stdout, stderr } = await runCli(['datasets', 'convert-wikisql', tasks, '--dump', dump, '--out', out, '--json']);
    expect([status, stderr]).toEqual([0, '']);
    expect(JSON.parse(stdout)).toEqual({
      records: 3,
      converted: 2,
      unconverted: [{ index: 2, id: '2', problem: 'unknown-column', reason: 'selects "Height", which is no column of t_1 (with or without MAX, MIN, COUNT, SUM, AVG)', form: TASKS[2]!.gold }],
      notes: [{ index: 1, id: '1', kind: 'stored-form', column: 'Score', written: 'W 98–91', used: 'W 9891' }],
      out,
    });
    expect(JSON.parse(await readFile(out, 'utf8'))).toEqual([
      { ...TASKS[0], gold: "SELECT `Player` FROM `t_1` WHERE `No.` = '3'", wikisql_form: TASKS[0]!.gold },
      { ...TASKS[1], gold: "SELECT COUNT(`Year`) FROM `t_1` WHERE `Score` = 'W 9891'", wikisql_form: TASKS[1]!.gold },
      { ...TASKS[2], wikisql_unconverted: 'unknown-column: selects "Height", which is no column of t_1 (with or without MAX, MIN, COUNT, SUM, AVG)' },
    ]);
  });

  it('lists the golds left as they were and the notes, one line each, then a summary', async () => {
    const out = join(tmp.dir, 'text.json');
    const { status, stdout } = await runCli(['datasets', 'convert-wikisql', tasks, '--dump', dump, '--out', out]);
    expect(status).toBe(0);
    expect(stdout.split('\n')).toEqual([
      '#2 not converted (unknown-column): selects "Height", which is no column of t_1 (with or without MAX, MIN, COUNT, SUM, AVG)',
      '#1 Score = "W 98–91" written as the dump stores it: "W 9891" (the dump has no non-ASCII characters in its cells)',
      `3 golds: 2 converted to SQL, 1 left as they were; 1 notes on values; wrote ${out}`,
      '',
    ]);
  });

  it('ends with one line naming the file for a dump it cannot read, a dump without tables, a broken dump', async () => {
    const out = join(tmp.dir, 'never.json');
    const missing = await runCli(['datasets', 'convert-wikisql', tasks, '--dump', join(tmp.dir, 'missing.sql'), '--out', out]);
    expect([missing.status, missing.stderr]).toEqual([1, `intercode: ${join(tmp.dir, 'missing.sql')}: cannot read the SQL dump (ENOENT)\n`]);
    const empty = await tmp.write('empty.sql', 'USE dev;\n');
    expect((await runCli(['datasets', 'convert-wikisql', tasks, '--dump', empty, '--out', out])).stderr).toBe(`intercode: ${empty}: creates no table (no CREATE TABLE statement)\n`);
    const broken = await tmp.write('broken.sql', "USE dev;\nCREATE TABLE t (a text);\nINSERT INTO t VALUES ('open);\n");
    expect((await runCli(['datasets', 'convert-wikisql', tasks, '--dump', broken, '--out', out])).stderr).toBe(`intercode: ${broken}, line 3: unclosed ' quote\n`);
    await expect(readFile(out)).rejects.toThrow(/ENOENT/);
  });
});
