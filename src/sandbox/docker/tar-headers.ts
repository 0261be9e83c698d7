import { closeSync, openSync, readSync } from 'node:fs';

/** One member of a tar archive, as its headers describe it (its contents are not read). */
export interface TarHeader {
  /** The member's name: the PAX `path` record where there is one, else the header's prefix and name. */
  name: string;
  type: 'file' | 'link' | 'symlink' | 'character-device' | 'block-device' | 'directory' | 'fifo' | 'other';
  devmajor: number;
  devminor: number;
  /** The member's own PAX records (`SCHILY.xattr.*`, `path`, `size`, …). */
  pax: Readonly<Record<string, string>>;
}

const BLOCK = 512;
const TYPES: Record<string, TarHeader['type']> = { '0': 'file', '\0': 'file', '7': 'file', '1': 'link', '2': 'symlink', '3': 'character-device', '4': 'block-device', '5': 'directory', '6': 'fifo' };

/**
 * The members of the POSIX (ustar/pax) archive at `path`, read header by header: each
 * member's contents are skipped by its size, never read, so listing an archive costs one
 * read per header whatever its size (tar-stream, used elsewhere here, passes every byte of
 * contents through its stream, which a fork's path cannot afford). GNU long-name members and global PAX headers
 * are understood; a truncated or malformed archive throws.
 */
export function readTarHeaders(path: string): TarHeader[] {
  const fd = openSync(path, 'r');
  try {
    const headers: TarHeader[] = [];
    const block = Buffer.alloc(BLOCK);
    let offset = 0;
    let pax: Record<string, string> = {};
    let global: Record<string, string> = {};
    let longName: string | undefined;
    const read = (length: number, at: number) => {
      const buffer = length === BLOCK ? block : Buffer.alloc(length);
      if (readSync(fd, buffer, 0, length, at) !== length) throw new Error(`${path}: the archive ends inside a member at byte ${at}`);
      return buffer;
    };
    for (;;) {
      const header = read(BLOCK, offset);
      if (header.every((byte) => byte === 0)) return headers;
      if (!validChecksum(header)) throw new Error(`${path}: no tar header at byte ${offset} (checksum)`);
      const flag = String.fromCharCode(header[156]!);
      const size = Number(pax.size ?? numberField(header, 124, 12));
      const body = offset + BLOCK;
      offset = body + Math.ceil(size / BLOCK) * BLOCK;
      if (flag === 'x' || flag === 'g') {
        const records = paxRecords(read(size, body));
        if (flag === 'x') pax = records;
        else global = { ...global, ...records };
        continue;
      }
      if (flag === 'L') {
        longName = read(size, body).toString('utf8').replace(/\0.*$/s, '');
        continue;
      }
      const own = { ...global, ...pax };
      const prefix = text(header, 345, 155);
      const name = own.path ?? longName ?? (prefix ? `${prefix}/${text(header, 0, 100)}` : text(header, 0, 100));
      headers.push({ name, type: TYPES[flag] ?? 'other', devmajor: numberField(header, 329, 8), devminor: numberField(header, 337, 8), pax: own });
      pax = {};
      longName = undefined;
    }
  } finally {
    closeSync(fd);
  }
}

function text(block: Buffer, start: number, length: number): string {
  const field = block.subarray(start, start + length);
  const end = field.indexOf(0);
  return field.subarray(0, end < 0 ? length : end).toString('utf8');
}

/** An octal field, or a base-256 one (high bit set: GNU's form for large numbers). */
function numberField(block: Buffer, start: number, length: number): number {
  const field = block.subarray(start, start + length);
  if (field[0]! & 0x80) return field.subarray(1).reduce((value, byte) => value * 256 + byte, field[0]! & 0x7f);
  const digits = text(block, start, length).trim();
  return digits === '' ? 0 : parseInt(digits, 8);
}

function validChecksum(block: Buffer): boolean {
  let sum = 8 * 0x20;
  for (let i = 0; i < BLOCK; i++) if (i < 148 || i >= 156) sum += block[i]!;
  return sum === numberField(block, 148, 8);
}

/** PAX records: `<length> <key>=<value>\n`, the length counting the whole record in bytes. */
function paxRecords(bytes: Buffer): Record<string, string> {
  const records: Record<string, string> = {};
  let at = 0;
  while (at < bytes.length) {
    const space = bytes.indexOf(0x20, at);
    const length = Number(bytes.subarray(at, space).toString('ascii'));
    if (space < 0 || !Number.isInteger(length) || length <= 0) break;
    const record = bytes.subarray(space + 1, at + length - 1).toString('utf8');
    const equals = record.indexOf('=');
    if (equals > 0) records[record.slice(0, equals)] = record.slice(equals + 1);
    at += length;
  }
  return records;
}
