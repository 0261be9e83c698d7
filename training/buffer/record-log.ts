/**
 * An append-only log of msgpack records in numbered segment files. Each record is framed
 * as `[u32 payload length][u32 CRC-32 of the payload][payload]` (little-endian), and each
 * append is one `write(2)` made before `append` returns, so a process killed at any moment
 * leaves every earlier record intact and at most a torn copy of the one it was writing.
 * Opening the log detects that torn tail (short header, short payload, or a checksum that
 * fails on the last frame) and truncates it away; a bad frame with data after it is
 * corruption, reported with the file and byte offset.
 */
import { closeSync, fstatSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, ftruncateSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { Packr } from 'msgpackr';
import { TrajectoryError } from '../../src/errors.js';

/** Written at the start of every segment: identifies the format and its version. */
const MAGIC = Buffer.from('ICRLOG01', 'ascii');
const FRAME_HEADER = 8;
const SEGMENT_NAME = /^segment-(\d{6})\.msgpack$/;

export interface RecordLogOptions {
  /** Start a new segment once the current one reaches this many bytes (default 64 MiB). */
  segmentBytes?: number;
}

/** One segment as the log knows it: its number and how many records it holds. */
export interface SegmentInfo {
  index: number;
  path: string;
  records: number;
  bytes: number;
}

/** What {@link RecordLog.open} found: every intact record, and whether a torn tail was dropped. */
export interface OpenedLog {
  log: RecordLog;
  records: unknown[];
  /** Bytes cut off the last segment (a record that was being written when its writer died). */
  droppedTailBytes: number;
}

const packr = new Packr({ useRecords: false, moreTypes: false });

const segmentPath = (dir: string, index: number) => join(dir, `segment-${String(index).padStart(6, '0')}.msgpack`);

/** Encodes one record as a frame. */
export function frameRecord(record: unknown): Buffer {
  const payload = packr.pack(record);
  const frame = Buffer.allocUnsafe(FRAME_HEADER + payload.length);
  frame.writeUInt32LE(payload.length, 0);
  frame.writeUInt32LE(crc32(payload), 4);
  payload.copy(frame, FRAME_HEADER);
  return frame;
}

/**
 * Reads the frames of one segment. @returns the records and the offset where intact data ends.
 * @throws TrajectoryError when the magic is wrong, or a frame is bad and more data follows it.
 */
function readSegment(path: string, isLast: boolean): { records: unknown[]; validBytes: number } {
  const data = readFileSync(path);
  if (data.length < MAGIC.length) {
    if (isLast && MAGIC.subarray(0, data.length).equals(data)) return { records: [], validBytes: 0 };
    throw new TrajectoryError({ file: path }, 'not a record-log segment (too short for its header)');
  }
  if (!data.subarray(0, MAGIC.length).equals(MAGIC)) throw new TrajectoryError({ file: path }, `not a record-log segment (header is not ${MAGIC.toString()})`);
  const records: unknown[] = [];
  let offset = MAGIC.length;
  while (offset < data.length) {
    const torn = (problem: string): never => {
      throw new TrajectoryError({ file: path, record: records.length + 1 }, `${problem} at byte ${offset} with ${data.length - offset} bytes after it`);
    };
    if (data.length - offset < FRAME_HEADER) {
      if (isLast) break;
      torn('short frame header');
    }
    const length = data.readUInt32LE(offset);
    const end = offset + FRAME_HEADER + length;
    if (end > data.length) {
      if (isLast) break;
      torn(`frame of ${length} bytes runs past the end of the file`);
    }
    const payload = data.subarray(offset + FRAME_HEADER, end);
    if (crc32(payload) !== data.readUInt32LE(offset + 4)) {
      if (isLast && end === data.length) break;
      torn('checksum mismatch');
    }
    records.push(packr.unpack(payload));
    offset = end;
  }
  return { records, validBytes: offset };
}

/** The append side of a log; created by {@link RecordLog.open}. */
export class RecordLog {
  private fd: number;
  private current: SegmentInfo;

  private constructor(
    readonly dir: string,
    private readonly segmentBytes: number,
    private readonly segmentList: SegmentInfo[],
  ) {
    this.current = segmentList.at(-1)!;
    this.fd = openSync(this.current.path, 'a');
  }

  /**
   * Opens (creating if needed) the log in `dir`, reads every intact record, and truncates a
   * torn tail off the last segment.
   * @throws TrajectoryError naming the segment and offset of a corrupt frame that is not the tail.
   */
  static open(dir: string, options: RecordLogOptions = {}): OpenedLog {
    mkdirSync(dir, { recursive: true });
    const indices = readdirSync(dir)
      .map((name) => SEGMENT_NAME.exec(name)?.[1])
      .filter((n): n is string => n !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
    const segments: SegmentInfo[] = [];
    const records: unknown[] = [];
    let droppedTailBytes = 0;
    indices.forEach((index, i) => {
      const path = segmentPath(dir, index);
      const isLast = i === indices.length - 1;
      const read = readSegment(path, isLast);
      const fd = openSync(path, 'r+');
      try {
        const size = fstatSync(fd).size;
        if (read.validBytes < MAGIC.length) {
          ftruncateSync(fd, 0);
          writeSync(fd, MAGIC, 0, MAGIC.length, 0);
        } else if (read.validBytes < size) {
          ftruncateSync(fd, read.validBytes);
        }
        droppedTailBytes += Math.max(0, size - Math.max(read.validBytes, MAGIC.length));
      } finally {
        closeSync(fd);
      }
      for (const record of read.records) records.push(record);
      segments.push({ index, path, records: read.records.length, bytes: Math.max(read.validBytes, MAGIC.length) });
    });
    if (segments.length === 0) segments.push(RecordLog.createSegment(dir, 1));
    return { log: new RecordLog(dir, options.segmentBytes ?? 64 * 1024 * 1024, segments), records, droppedTailBytes };
  }

  private static createSegment(dir: string, index: number): SegmentInfo {
    const path = segmentPath(dir, index);
    const fd = openSync(path, 'wx');
    try {
      writeSync(fd, MAGIC);
    } finally {
      closeSync(fd);
    }
    return { index, path, records: 0, bytes: MAGIC.length };
  }

  /** The segments, oldest first. */
  get segments(): readonly SegmentInfo[] {
    return this.segmentList;
  }

  /** Appends one record with a single write; it is in the file (the OS's page cache) when this returns. */
  append(record: unknown): void {
    this.writeFrames([frameRecord(record)]);
  }

  /** Appends records with one write per segment; a process killed during the write loses at most this batch. */
  appendMany(records: readonly unknown[]): void {
    this.writeFrames(records.map(frameRecord));
  }

  private writeFrames(frames: Buffer[]): void {
    let start = 0;
    while (start < frames.length) {
      if (this.current.bytes >= this.segmentBytes) this.rotate();
      let end = start;
      let bytes = 0;
      while (end < frames.length && (end === start || this.current.bytes + bytes + frames[end]!.length <= this.segmentBytes)) bytes += frames[end++]!.length;
      const chunk = end - start === 1 ? frames[start]! : Buffer.concat(frames.slice(start, end), bytes);
      writeSync(this.fd, chunk);
      this.current.bytes += bytes;
      this.current.records += end - start;
      start = end;
    }
  }

  private rotate(): void {
    closeSync(this.fd);
    this.current = RecordLog.createSegment(this.dir, this.current.index + 1);
    this.segmentList.push(this.current);
    this.fd = openSync(this.current.path, 'a');
  }

  /**
   * Deletes the oldest segments while the records in the newer ones still number at least
   * `keepRecords` (records a bounded buffer has evicted anyway). The current segment stays.
   * @returns how many records were deleted with them.
   */
  dropSegmentsBeyond(keepRecords: number): number {
    let newer = this.segmentList.reduce((sum, s) => sum + s.records, 0);
    let dropped = 0;
    while (this.segmentList.length > 1 && newer - this.segmentList[0]!.records >= keepRecords) {
      const oldest = this.segmentList.shift()!;
      newer -= oldest.records;
      dropped += oldest.records;
      rmSync(oldest.path);
    }
    return dropped;
  }

  /** Total bytes on disk over every segment. */
  get bytes(): number {
    return this.segmentList.reduce((sum, s) => sum + s.bytes, 0);
  }

  close(): void {
    closeSync(this.fd);
  }
}

