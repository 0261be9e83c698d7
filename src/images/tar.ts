import { lstat, readdir, readFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { pack } from 'tar-stream';

export interface TarEntry {
  /** Path inside the archive, with `/` separators; directories end without a slash. */
  name: string;
  type: 'file' | 'directory';
  content?: Buffer;
  mode: number;
}

/** A fixed time for every entry, so the same inputs always give the same bytes. */
export const FIXED_MTIME = new Date('2024-01-01T00:00:00Z');

/** Packs entries into a tar archive (owned by root, fixed mtime). */
export async function packEntries(entries: readonly TarEntry[]): Promise<Buffer> {
  const archive = pack();
  const chunks: Buffer[] = [];
  archive.on('data', (chunk: unknown) => chunks.push(chunk as Buffer));
  const done = new Promise<void>((resolve, reject) => {
    archive.on('end', resolve);
    archive.on('error', reject);
  });
  for (const entry of entries) {
    const header = { name: entry.name, mode: entry.mode, mtime: FIXED_MTIME, uid: 0, gid: 0, uname: 'root', gname: 'root' };
    if (entry.type === 'directory') archive.entry({ ...header, type: 'directory' });
    else archive.entry({ ...header, type: 'file' }, entry.content ?? Buffer.alloc(0));
  }
  archive.finalize();
  await done;
  return Buffer.concat(chunks);
}

/**
 * Lists a directory tree as tar entries under `prefix`, sorted, with only the executable
 * bit kept from the source modes (what git preserves): files 0644 or 0755, dirs 0755.
 */
export async function directoryEntries(root: string, prefix: string): Promise<TarEntry[]> {
  const entries: TarEntry[] = [{ name: prefix, type: 'directory', mode: 0o755 }];
  async function walk(dir: string): Promise<void> {
    const names = (await readdir(dir)).sort();
    for (const name of names) {
      const path = join(dir, name);
      const inArchive = `${prefix}/${relative(root, path).split(sep).join('/')}`;
      const info = await lstat(path);
      if (info.isDirectory()) {
        entries.push({ name: inArchive, type: 'directory', mode: 0o755 });
        await walk(path);
      } else if (info.isFile()) {
        entries.push({ name: inArchive, type: 'file', content: await readFile(path), mode: info.mode & 0o111 ? 0o755 : 0o644 });
      }
    }
  }
  await walk(root);
  return entries;
}
