import { appendFileSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../setup/temp-dirs.js';
import { TrajectoryError } from '../../src/errors.js';
import { frameRecord, RecordLog } from '../../training/buffer/record-log.js';

const freshDir = () => tempDir('record-log-');
const onlySegment = (dir: string) => join(dir, readdirSync(dir).find((n) => n.startsWith('segment-'))!);

describe('RecordLog', () => {
  it('reads back what was appended, in order, across reopenings', () => {
    const dir = freshDir();
    const first = RecordLog.open(dir);
    first.log.append({ a: 1 });
    first.log.appendMany([[1, 'two', true], 'three']);
    first.log.close();
    const second = RecordLog.open(dir);
    expect(second.records).toEqual([{ a: 1 }, [1, 'two', true], 'three']);
    expect(second.droppedTailBytes).toBe(0);
    second.log.append(4);
    second.log.close();
    expect(RecordLog.open(dir).records).toEqual([{ a: 1 }, [1, 'two', true], 'three', 4]);
  });

  it('drops a half-written last record and appends after the intact ones', () => {
    const dir = freshDir();
    const opened = RecordLog.open(dir);
    opened.log.appendMany(['kept-1', 'kept-2']);
    opened.log.close();
    const torn = frameRecord('x'.repeat(100));
    appendFileSync(onlySegment(dir), torn.subarray(0, 40));
    const reopened = RecordLog.open(dir);
    expect(reopened.records).toEqual(['kept-1', 'kept-2']);
    expect(reopened.droppedTailBytes).toBe(40);
    reopened.log.append('after');
    reopened.log.close();
    expect(RecordLog.open(dir).records).toEqual(['kept-1', 'kept-2', 'after']);
  });

  it('drops a last record whose checksum fails, and one whose header is cut short', () => {
    const dir = freshDir();
    const opened = RecordLog.open(dir);
    opened.log.appendMany(['a', 'b']);
    opened.log.close();
    const path = onlySegment(dir);
    const data = readFileSync(path);
    data[data.length - 1] ^= 0xff;
    writeFileSync(path, data);
    expect(RecordLog.open(dir).records).toEqual(['a']);
    appendFileSync(path, Buffer.from([7, 0, 0]));
    const again = RecordLog.open(dir);
    expect(again.records).toEqual(['a']);
    expect(again.droppedTailBytes).toBe(3);
  });

  it('reports corruption followed by more data with the file and byte offset', () => {
    const dir = freshDir();
    const opened = RecordLog.open(dir);
    opened.log.appendMany(['a', 'b', 'c']);
    opened.log.close();
    const path = onlySegment(dir);
    const data = readFileSync(path);
    const secondPayload = 8 + frameRecord('a').length + 8;
    data[secondPayload] ^= 0xff;
    writeFileSync(path, data);
    expect(() => RecordLog.open(dir)).toThrow(TrajectoryError);
    expect(() => RecordLog.open(dir)).toThrow(new RegExp(`${path.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}, record 2: checksum mismatch at byte ${8 + frameRecord('a').length}`));
  });

  it('rejects a file that is not a segment', () => {
    const dir = freshDir();
    writeFileSync(join(dir, 'segment-000001.msgpack'), 'hello, world');
    expect(() => RecordLog.open(dir)).toThrow(/not a record-log segment/);
  });

  it('rotates segments at the size limit and deletes the ones a bounded reader no longer needs', () => {
    const dir = freshDir();
    const { log } = RecordLog.open(dir, { segmentBytes: 256 });
    for (let i = 0; i < 100; i++) log.append({ i, pad: 'p'.repeat(20) });
    expect(log.segments.length).toBeGreaterThan(5);
    for (const s of log.segments.slice(0, -1)) expect(statSync(s.path).size).toBeLessThanOrEqual(256 + 40);
    const dropped = log.dropSegmentsBeyond(30);
    const kept = log.segments.reduce((n, s) => n + s.records, 0);
    expect(kept).toBeGreaterThanOrEqual(30);
    expect(kept - log.segments[0]!.records).toBeLessThan(30);
    expect(dropped + kept).toBe(100);
    log.close();
    const reopened = RecordLog.open(dir);
    expect(reopened.records.map((r) => (r as { i: number }).i)).toEqual(Array.from({ length: kept }, (_, k) => 100 - kept + k));
  });

  it('treats an empty or header-only last segment as empty', () => {
    const dir = freshDir();
    RecordLog.open(dir).log.close();
    truncateSync(onlySegment(dir), 3);
    const opened = RecordLog.open(dir);
    expect(opened.records).toEqual([]);
    opened.log.append('x');
    opened.log.close();
    expect(RecordLog.open(dir).records).toEqual(['x']);
  });
});
