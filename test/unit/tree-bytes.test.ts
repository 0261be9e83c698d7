/**
 * treeBytes, which the disk limit rests on: past PATH_MAX (folders an agent nested) it still
 * counts every file, and both ways of counting (the walk, and `du` for deep trees) follow the
 * same rules — blocks held, each hard-linked file once, no link followed.
 */
import { spawnSync } from 'node:child_process';
import { linkSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { removeTree } from '../../src/sandbox/disk/remove-tree.js';
import { treeBytes } from '../../src/sandbox/disk/layer-usage.js';
import { makeTempDir } from '../datasets/tmp-files.js';

const temp = await makeTempDir();
// The deep chains are past what Node's rm removes.
afterAll(() => removeTree(temp.dir));
const MiB = 2 ** 20;

/** A file of 1 MiB, a hard link to it, a link to a big file outside: 1 MiB held (plus metadata). */
function fill(dir: string, outside: string): void {
  writeFileSync(join(dir, 'data'), Buffer.alloc(MiB, 1));
  linkSync(join(dir, 'data'), join(dir, 'data-again'));
  symlinkSync(outside, join(dir, 'to-outside'));
}

describe('treeBytes', () => {
  const outside = join(temp.dir, 'outside');
  writeFileSync(outside, Buffer.alloc(8 * MiB, 1));

  it('counts the files below a chain deeper than PATH_MAX, each hard-linked file once, no link followed', async () => {
    // Two chains of 1,500 folders; at the foot of one, the files of `fill` (made from below: no path reaches them).
    const chain = (dir: string, withFiles: boolean) => {
      mkdirSync(dir);
      const script = "import os, sys\nos.chdir(sys.argv[1])\nfor _ in range(1500): os.mkdir('dd'); os.chdir('dd')\nif sys.argv[3] == 'files':\n    open('data', 'wb').write(b'\\x01' * 2**20)\n    os.link('data', 'data-again')\n    os.symlink(sys.argv[2], 'to-outside')";
      const made = spawnSync('/usr/bin/python3', ['-c', script, dir, outside, withFiles ? 'files' : 'bare'], { encoding: 'utf8' });
      expect(made.status, made.stderr).toBe(0);
    };
    const [withFiles, bare] = [join(temp.dir, 'with-files'), join(temp.dir, 'bare')];
    chain(withFiles, true);
    chain(bare, false);
    const held = (await treeBytes(withFiles)) - (await treeBytes(bare));
    expect(held).toBeGreaterThanOrEqual(MiB);
    expect(held).toBeLessThan(MiB + 64 * 1024);
  });

  it('the du way and the walk agree on a tree a walk can name', async () => {
    const dir = join(temp.dir, 'agree');
    mkdirSync(join(dir, 'a', 'b'), { recursive: true });
    fill(join(dir, 'a', 'b'), outside);
    const du = spawnSync('du', ['-s', '-B1', '-P', '--', dir], { encoding: 'utf8' });
    const own = spawnSync('stat', ['-c', '%b', dir], { encoding: 'utf8' });
    expect(await treeBytes(dir)).toBe(Number(du.stdout.split('\t')[0]) - Number(own.stdout) * 512);
  });
});
