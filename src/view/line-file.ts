/**
 * A JSON Lines file read by byte offsets, never whole: a page is the lines from an offset
 * on, read in chunks until enough lines (or bytes) are in, so the first page of a 1 GB file
 * costs what its first lines cost. A line's offset is its address (a page's next one, an
 * episode's link); an offset that is not a line start is refused.
 */

import { open, type FileHandle } from 'node:fs/promises';
import { TrajectoryError } from '../errors.js';

const CHUNK = 1 << 20;
const NEWLINE = 0x0a;

/** One line: where it starts, where the next one starts, and its bytes (without the newline). */
export interface RawLine {
  offset: number;
  next: number;
  bytes: Buffer;
}

export interface ReadLimits {
  /** Stop after this many lines. */
  lines: number;
  /** Stop once this many bytes have been read (the line under way is finished first). */
  bytes?: number;
}

/** Whether `offset` starts a line of the open file: 0, or a byte after a newline. */
async function isLineStart(file: FileHandle, offset: number): Promise<boolean> {
  if (offset === 0) return true;
  const byte = Buffer.alloc(1);
  const { bytesRead } = await file.read(byte, 0, 1, offset - 1);
  return bytesRead === 1 && byte[0] === NEWLINE;
}

/**
 * Reads lines of `path` from byte `offset` on: up to `limits.lines` lines, fewer at the end
 * of the file or past `limits.bytes`. A last line without its newline is a line too (a file
 * written by hand); blank lines are skipped.
 * @throws TrajectoryError naming the file when it cannot be read or `offset` is not a line start.
 */
export async function readLines(path: string, offset: number, limits: ReadLimits): Promise<{ lines: RawLine[]; next: number | null }> {
  let file: FileHandle;
  try {
    file = await open(path, 'r');
  } catch (error) {
    throw new TrajectoryError({ file: path }, `cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`, error);
  }
  try {
    if (!Number.isSafeInteger(offset) || offset < 0 || !(await isLineStart(file, offset))) {
      throw new TrajectoryError({ file: path }, `byte ${offset} is not the start of a line`);
    }
    const lines: RawLine[] = [];
    const pending: Buffer[] = [];
    let lineStart = offset;
    let position = offset;
    const chunk = Buffer.allocUnsafe(CHUNK);
    const push = (bytes: Buffer, next: number) => {
      if (bytes.some((b) => b !== 0x20 && b !== 0x09 && b !== 0x0d)) lines.push({ offset: lineStart, next, bytes });
      lineStart = next;
    };
    for (;;) {
      const { bytesRead } = await file.read(chunk, 0, CHUNK, position);
      if (bytesRead === 0) {
        if (pending.length > 0) push(Buffer.concat(pending), position);
        return { lines, next: null };
      }
      let from = 0;
      for (let at = chunk.indexOf(NEWLINE, 0); at !== -1 && at < bytesRead; at = chunk.indexOf(NEWLINE, from)) {
        pending.push(Buffer.from(chunk.subarray(from, at)));
        push(Buffer.concat(pending), position + at + 1);
        pending.length = 0;
        from = at + 1;
        if (lines.length >= limits.lines || (limits.bytes !== undefined && lineStart - offset >= limits.bytes)) return { lines, next: lineStart };
      }
      pending.push(Buffer.from(chunk.subarray(from, bytesRead)));
      position += bytesRead;
    }
  } finally {
    await file.close();
  }
}

/** The one line starting at `offset`. @throws TrajectoryError as {@link readLines}, and when no line starts there. */
export async function readLineAt(path: string, offset: number): Promise<RawLine> {
  const { lines } = await readLines(path, offset, { lines: 1 });
  const line = lines[0];
  if (!line || line.offset !== offset) throw new TrajectoryError({ file: path }, `no line starts at byte ${offset}`);
  return line;
}

/** The first line start at or after byte `position` (the file's size when there is none). */
export async function lineStartFrom(path: string, position: number): Promise<number> {
  if (position <= 0) return 0;
  const file = await open(path, 'r');
  try {
    const chunk = Buffer.allocUnsafe(CHUNK);
    for (let at = position - 1; ; at += CHUNK) {
      const { bytesRead } = await file.read(chunk, 0, CHUNK, at);
      if (bytesRead === 0) return at;
      const newline = chunk.subarray(0, bytesRead).indexOf(NEWLINE);
      if (newline !== -1) return at + newline + 1;
    }
  } finally {
    await file.close();
  }
}
