/**
 * readTarHeaders (headers only, contents skipped) lists what tar-stream (which reads every
 * byte) lists: names, types, device numbers and PAX records, for archives made by GNU tar and
 * by tar-stream with what a sandbox's layer holds (overlayfs attributes, whiteouts, long names).
 */
import { execFileSync } from 'node:child_process';
import { createReadStream, createWriteStream, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { extract, pack } from 'tar-stream';
import { afterAll, describe, expect, it } from 'vitest';
import { finished } from 'node:stream/promises';
import { readTarHeaders } from '../../src/sandbox/docker/tar-headers.js';

const dir = mkdtempSync(join(tmpdir(), 'tar-headers-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What tar-stream reads of each member, in readTarHeaders' shape. */
async function viaTarStream(path: string) {
  const seen: { name: string; type: string; devmajor: number; devminor: number; pax: Record<string, string> }[] = [];
  await new Promise<void>((resolve, reject) => {
    const reader = extract();
    reader.on('entry', (header, stream, next) => {
      const type = ['file', 'link', 'symlink', 'character-device', 'block-device', 'directory', 'fifo'].includes(header.type) ? header.type : 'other';
      seen.push({ name: header.name, type, devmajor: header.devmajor ?? 0, devminor: header.devminor ?? 0, pax: (header.pax ?? {}) as Record<string, string> });
      stream.on('end', next);
      stream.resume();
    });
    reader.on('finish', resolve);
    reader.on('error', reject);
    createReadStream(path).pipe(reader);
  });
  return seen;
}

describe('readTarHeaders', () => {
  it('lists a GNU tar POSIX archive of files, folders, links, a FIFO and a long name as tar-stream does', async () => {
    const root = join(dir, 'tree');
    mkdirSync(join(root, 'd', 'e'), { recursive: true });
    writeFileSync(join(root, 'd', 'f'), 'x'.repeat(5000));
    writeFileSync(join(root, `${'n'.repeat(150)}.txt`), 'long');
    writeFileSync(join(root, 'empty'), '');
    symlinkSync('d/f', join(root, 'link'));
    execFileSync('ln', [join(root, 'd', 'f'), join(root, 'hard')]);
    execFileSync('mkfifo', [join(root, 'pipe')]);
    const archive = join(dir, 'gnu.tar');
    execFileSync('tar', ['--format=posix', '--xattrs', '--numeric-owner', '-C', root, '-cf', archive, '.']);
    const listed = readTarHeaders(archive);
    expect(listed.map(({ name, type }) => [name, type])).toEqual((await viaTarStream(archive)).map(({ name, type }) => [name, type]));
    expect(listed.map((h) => h.type).sort()).toEqual(['directory', 'directory', 'directory', 'fifo', 'file', 'file', 'file', 'link', 'symlink']);
    expect(listed.find((h) => h.name.endsWith('.txt'))!.name).toBe(`./${'n'.repeat(150)}.txt`);
  });

  it('reads PAX records (binary attribute values included), whiteouts and device numbers as tar-stream does', async () => {
    const archive = join(dir, 'layer.tar');
    const packer = pack();
    const written = finished(packer.pipe(createWriteStream(archive)));
    packer.entry({ name: 'tmp', type: 'directory', pax: { 'SCHILY.xattr.trusted.overlay.opaque': 'y' } });
    packer.entry({ name: 'etc/hosts', pax: { 'SCHILY.xattr.trusted.overlay.origin': '\u0000\u00fb!\u0001', 'SCHILY.xattr.user.note': 'é' } }, 'hosts\n');
    packer.entry({ name: 'gone', type: 'character-device', devmajor: 0, devminor: 0 });
    packer.entry({ name: 'dev/null2', type: 'character-device', devmajor: 1, devminor: 3 });
    packer.entry({ name: `${'p'.repeat(120)}/${'q'.repeat(120)}`, pax: { path: `${'p'.repeat(120)}/${'q'.repeat(120)}` } }, 'deep');
    packer.finalize();
    await written;
    const listed = readTarHeaders(archive);
    const expected = await viaTarStream(archive);
    expect(listed.map(({ name, type, devmajor, devminor }) => ({ name, type, devmajor, devminor }))).toEqual(expected.map(({ name, type, devmajor, devminor }) => ({ name, type, devmajor, devminor })));
    expect(listed.map((h) => Object.keys(h.pax).sort())).toEqual(expected.map((h) => Object.keys(h.pax).sort()));
    expect(listed[0]!.pax['SCHILY.xattr.trusted.overlay.opaque']).toBe('y');
    expect(listed[2]).toMatchObject({ type: 'character-device', devmajor: 0, devminor: 0 });
  });

  it('throws on a truncated archive and on bytes that are no tar header', () => {
    const archive = join(dir, 'gnu.tar');
    const cut = join(dir, 'cut.tar');
    writeFileSync(cut, execFileSync('head', ['-c', '1000', archive]));
    expect(() => readTarHeaders(cut)).toThrow(/ends inside a member|no tar header/);
    const junk = join(dir, 'junk.tar');
    writeFileSync(junk, Buffer.alloc(1024, 7));
    expect(() => readTarHeaders(junk)).toThrow(/no tar header/);
  });
});
