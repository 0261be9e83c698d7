/** TaskAssets: what of a task_assets folder reaches a sandbox (no Docker). */
import { chmod, mkdir, rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { extract } from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assetsBeside, TaskAssets } from '../../envs/ctf/index.js';
import type { Task } from '../../src/datasets/index.js';
import { DatasetError } from '../../src/errors.js';
import { writeTree } from '../setup/docker.js';

const task = (id: string, index = 0): Task => ({ index, id, query: 'q', gold: 'flag{x}', metadata: { task_id: id } });

async function names(tar: Buffer): Promise<string[]> {
  const reader = extract();
  const seen: string[] = [];
  reader.on('entry', (header, stream, next) => {
    seen.push(`${header.type === 'directory' ? 'd' : 'f'} ${header.name}${header.mode! & 0o111 && header.type === 'file' ? ' x' : ''}`);
    stream.on('end', next);
    stream.resume();
  });
  const done = new Promise<void>((resolve) => reader.on('finish', () => resolve()));
  reader.end(tar);
  await done;
  return seen.sort();
}

let root: string;
beforeAll(async () => {
  root = await writeTree(
    {
      'task_assets/3/data.txt': 'x',
      'task_assets/3/sub/solution/notes.md': 'nested solution folder',
      'task_assets/3/solution/solve.py': 'print("flag{x}")',
      'task_assets/4/solution/README.md': 'only a write-up',
      'task_assets/5/run.sh': '#!/bin/sh\n',
      'task_assets/5/secret-outside': 'target',
      'ic_ctf.json': '[]',
    },
    'intercode-ctf-assets-',
  );
  await symlink('/etc/passwd', join(root, 'task_assets', '5', 'passwd-link'));
  await mkdir(join(root, 'task_assets', '6'));
  await chmod(join(root, 'task_assets', '5', 'run.sh'), 0o755);
});
afterAll(() => rm(root, { recursive: true, force: true }));

describe('TaskAssets', () => {
  it('packs the task folder under <task_id>/ without solution/ folders at any depth', async () => {
    const assets = new TaskAssets(join(root, 'task_assets'));
    expect(await names(await assets.archive(task('3')))).toEqual(['d 3', 'd 3/sub', 'f 3/data.txt']);
  });

  it('leaves symbolic links out and keeps the executable bit', async () => {
    const assets = new TaskAssets(join(root, 'task_assets'));
    expect(await names(await assets.archive(task('5')))).toEqual(['d 5', 'f 5/run.sh x', 'f 5/secret-outside']);
  });

  it('gives an empty folder for a task without files', async () => {
    const assets = new TaskAssets(join(root, 'task_assets'));
    expect(await names(await assets.archive(task('99')))).toEqual(['d 99']);
  });

  it('check() lists tasks with no files (missing, empty, or only solution/)', async () => {
    const assets = new TaskAssets(join(root, 'task_assets'));
    const tasks = ['3', '4', '5', '6', '7'].map((id, i) => task(id, i));
    expect(await assets.check(tasks, 'tasks.json')).toEqual(['4', '6', '7']);
  });

  it('check() rejects a task id that is not one safe folder name, naming the record', async () => {
    const assets = new TaskAssets(join(root, 'task_assets'));
    for (const id of ['../3', 'a/b', '..', '.', '']) {
      const error = await assets.check([task('3', 0), task(id, 1)], 'tasks.json').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DatasetError);
      expect((error as DatasetError).message).toMatch(/^tasks\.json, record 2, field "task_id": /);
    }
  });

  it('check() rejects a root that is not a folder', async () => {
    await expect(new TaskAssets(join(root, 'nope')).check([], 'tasks.json')).rejects.toThrow(/nope: the CTF asset folder does not exist/);
  });

  it('assetsBeside finds task_assets next to a task file', () => {
    expect(assetsBeside(join(root, 'ic_ctf.json'))).toBe(join(root, 'task_assets'));
    expect(assetsBeside(join(root, 'task_assets', '3', 'data.txt'))).toBeUndefined();
  });
});
