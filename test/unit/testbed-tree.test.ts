/**
 * testbedTree: what `--reset intercode` re-dates — a tarball's top-level entries at / and its newest time,
 * `/testbed` for a packed directory, nothing for `none`.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pack } from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testbedTree } from '../../envs/bash/images.js';
import { FIXED_MTIME } from '../../src/images/tar.js';

async function tarOf(entries: { name: string; mtime: string; type?: 'directory' }[]): Promise<Buffer> {
  const archive = pack();
  for (const entry of entries) {
    if (entry.type) archive.entry({ name: entry.name, type: 'directory', mtime: new Date(entry.mtime) });
    else archive.entry({ name: entry.name, mtime: new Date(entry.mtime) }, 'x');
  }
  archive.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of archive) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe('testbedTree', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'testbed-tree-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("lists a tarball's top-level entries (with or without ./) and its newest time", async () => {
    const path = join(dir, 'fs.tar');
    await writeFile(
      path,
      await tarOf([
        { name: './workspace/', mtime: '2026-11-21T04:15:00Z', type: 'directory' },
        { name: './workspace/dir1/a.txt', mtime: '2026-11-21T04:15:56Z' },
        { name: 'backup/file.txt', mtime: '2026-11-21T04:15:10Z' },
        { name: 'index.html', mtime: '2023-05-31T23:59:00Z' },
        { name: './', mtime: '2026-11-21T05:00:00Z', type: 'directory' },
      ]),
    );
    expect(await testbedTree(path)).toEqual({ roots: ['backup', 'index.html', 'workspace'], newest: Date.parse('2026-11-21T05:00:00Z') / 1000 });
  });

  it('gives /testbed at the fixed packing time for a directory, and nothing for none or an empty tarball', async () => {
    expect(await testbedTree(dir)).toEqual({ roots: ['testbed'], newest: FIXED_MTIME.getTime() / 1000 });
    expect(await testbedTree('none')).toBeUndefined();
    const empty = join(dir, 'empty.tar');
    await writeFile(empty, await tarOf([]));
    expect(await testbedTree(empty)).toBeUndefined();
  });
});
