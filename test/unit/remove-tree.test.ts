/**
 * removeTree, which removes what an agent left in a root's folder: a chain of folders nested
 * past PATH_MAX (where Node's own recursive rm gives up) goes entirely, and a link inside is
 * removed, never its target.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { removeTree } from '../../src/sandbox/disk/remove-tree.js';
import { makeTempDir } from '../datasets/tmp-files.js';

const temp = await makeTempDir();
// What is left past PATH_MAX (a failed test) is beyond Node's rm.
afterAll(() => removeTree(temp.dir));

/** Nests 1,500 folders `dd` below `dir` (4,500 characters: past PATH_MAX) and a file at the foot. */
function nestDeep(dir: string): void {
  const made = spawnSync('/usr/bin/python3', ['-c', "import os, sys\nos.chdir(sys.argv[1])\nfor _ in range(1500): os.mkdir('dd'); os.chdir('dd')\nopen('foot', 'w').write('foot')", dir], { encoding: 'utf8' });
  expect(made.status, made.stderr).toBe(0);
}

describe('removeTree', () => {
  it('removes a tree deeper than PATH_MAX, which Node\'s rm leaves', async () => {
    const [deep, control] = [join(temp.dir, 'deep'), join(temp.dir, 'control')];
    for (const dir of [deep, control]) {
      mkdirSync(dir);
      nestDeep(dir);
    }
    // The control: without removeTree the chain stays.
    await expect(rm(control, { recursive: true, force: true })).rejects.toMatchObject({ code: 'ENAMETOOLONG' });
    expect(existsSync(control)).toBe(true);
    await removeTree(deep);
    expect(existsSync(deep)).toBe(false);
    await removeTree(control);
    expect(existsSync(control)).toBe(false);
  });

  it('removes links, not what they point to', async () => {
    const [tree, outside] = [join(temp.dir, 'tree'), join(temp.dir, 'outside')];
    mkdirSync(join(tree, 'a'), { recursive: true });
    mkdirSync(outside);
    writeFileSync(join(outside, 'kept'), 'kept');
    symlinkSync(outside, join(tree, 'to-outside'));
    symlinkSync(join(outside, 'kept'), join(tree, 'a', 'to-kept'));
    symlinkSync('../..', join(tree, 'a', 'up'));
    nestDeep(join(tree, 'a'));
    symlinkSync(outside, join(tree, 'a', ...Array(20).fill('dd'), 'deep-to-outside'));
    await removeTree(tree);
    expect(existsSync(tree)).toBe(false);
    expect(readFileSync(join(outside, 'kept'), 'utf8')).toBe('kept');
  });

  it('is done at once when the folder is absent', async () => {
    await expect(removeTree(join(temp.dir, 'never-made'))).resolves.toBeUndefined();
  });
});
