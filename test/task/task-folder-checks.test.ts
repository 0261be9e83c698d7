/**
 * No silent wrong results from a folder of Harbor tasks or a runtime the engine lacks (the
 * CLI from source, in Docker): a sub-folder without task.toml is named on stderr with the
 * reason while the others run (exit 0), and `--strict` refuses it; a missing `--data` folder
 * says it is missing; `--runtime foo` is refused before any image or sandbox, naming the
 * engine's runtimes.
 */
import { cp, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-path.js';
import { intercodeFromSource } from '../setup/cli.js';
import { dockerTestFile, skipWithoutEngine } from '../setup/docker.js';
import { tempDir } from '../setup/temp-dirs.js';

const { engine } = await dockerTestFile();
const FIXTURES = packagePath('test', 'fixtures', 'harbor-tasks');

async function partialDataset(): Promise<string> {
  const data = tempDir('ic-task-partial-');
  await cp(join(FIXTURES, 'own', 'hello-txt'), join(data, 'hello-txt'), { recursive: true });
  // A folder that looks like a task but has no task.toml (sorted first: it would take index 0).
  await mkdir(join(data, 'a-draft', 'tests'), { recursive: true });
  await writeFile(join(data, 'a-draft', 'instruction.md'), 'unfinished\n');
  await mkdir(join(data, '.git'));
  return data;
}

describe('a folder of Harbor tasks, checked (no engine needed)', () => {
  it('--strict: a sub-folder without task.toml is an error naming it', async () => {
    const data = await partialDataset();
    const run = await intercodeFromSource(['run', 'task', '--data', data, '--strict']);
    expect(run.stderr.trim().split('\n').at(-1)).toBe(`intercode: ${join(data, 'a-draft')}: holds no task.toml: not a Harbor task (without --strict it is skipped with a note)`);
    expect(run.code).toBe(1);
  });

  it('a missing --data folder says it does not exist; a file says it is not a folder', async () => {
    const missing = join(tempDir('ic-task-missing-'), 'nope');
    const run = await intercodeFromSource(['run', 'task', '--data', missing]);
    expect(run.stderr.trim().split('\n').at(-1)).toBe(`intercode: ${missing}: does not exist (--data names a Harbor task directory, or a folder of them)`);
    expect(run.code).toBe(1);
    const file = join(FIXTURES, 'own', 'hello-txt', 'task.toml');
    const onFile = await intercodeFromSource(['run', 'task', '--data', file]);
    expect(onFile.stderr).toContain(`${file}: is a file, not a folder`);
  });
});

describe.skipIf(skipWithoutEngine(engine, 'task folder and runtime checks'))('in Docker', () => {
  it('a sub-folder without task.toml is named with the reason; the others run, exit 0', async () => {
    const data = await partialDataset();
    const run = await intercodeFromSource(['run', 'task', '--data', data, '--keep-warm', '0', '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(`task: skipped ${join(data, 'a-draft')}: it holds no task.toml, so it is not a Harbor task (--strict makes this an error)`);
    expect(run.stderr).not.toContain('.git');
    expect((JSON.parse(run.stdout) as { tasks: unknown[] }).tasks).toEqual([{ index: 0, reward: 1, parts: { reward: 1 } }]);
  }, 300_000);

  it('--runtime foo: refused at once, naming the runtimes the engine has', async () => {
    const run = await intercodeFromSource(['run', 'bash', '--runtime', 'foo']);
    const last = run.stderr.trim().split('\n').at(-1)!;
    expect(last).toMatch(/^intercode: --runtime names "foo", which the engine at \S+ does not have: its runtimes are [^;]*\brunc\b/);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
  }, 120_000);
});
