/** One JSON object read from a Python process's stream. */
export type FrameObject = Record<string, unknown>;

/** What a chunk of the stream held: whole frames, or the reason the stream can no longer be read. */
export type FrameEvent = { kind: 'frame'; frame: FrameObject } | { kind: 'malformed'; reason: string };

/** Default upper bound of one frame's payload: 16 MiB (a score reply of many clipped outcomes fits well within). */
export const DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024;
/** Longest length header accepted: the digits of {@link DEFAULT_MAX_FRAME_BYTES} and some. */
const MAX_HEADER_BYTES = 20;
/** Bytes outside frames kept for error messages (the driver's own crash report). */
const NOISE_BYTES = 4096;

/**
 * Splits a byte stream from a Python process in a sandbox into frames
 * `<prefix><length>\n<JSON object>`; bytes outside frames are kept only as the last few KiB
 * of "noise". Everything that comes from a sandbox is untrusted: any input gives either
 * frames or one `malformed` event with a reason (a bad length, a length over the limit, a
 * payload that is not a JSON object), never an exception; after `malformed` the reader
 * ignores the rest of the stream. Memory held: at most the prefix, the header and one
 * frame of `maxFrameBytes`, plus the noise.
 */
export class FrameReader {
  private buffer: Buffer = Buffer.alloc(0);
  private noiseText = '';
  private broken: string | undefined;

  constructor(
    private readonly prefix: Buffer,
    private readonly maxFrameBytes = DEFAULT_MAX_FRAME_BYTES,
  ) {}

  /** The last few KiB the stream held outside frames. */
  get noise(): string {
    return this.noiseText;
  }

  /** Why the stream stopped being read, or undefined while it is sound. */
  get malformed(): string | undefined {
    return this.broken;
  }

  /** Takes a chunk of the stream; returns the events it completed. */
  push(chunk: Buffer): FrameEvent[] {
    if (this.broken !== undefined) return [];
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    const events: FrameEvent[] = [];
    for (;;) {
      const start = this.buffer.indexOf(this.prefix);
      if (start < 0) {
        const keep = Math.max(0, this.buffer.length - this.prefix.length + 1);
        this.addNoise(this.buffer.subarray(0, keep));
        this.buffer = Buffer.from(this.buffer.subarray(keep));
        return events;
      }
      if (start > 0) this.addNoise(this.buffer.subarray(0, start));
      const headerStart = start + this.prefix.length;
      const newline = this.buffer.indexOf(0x0a, headerStart);
      if (newline < 0) {
        if (this.buffer.length - headerStart > MAX_HEADER_BYTES) return this.fail(events, 'a frame header longer than its limit');
        this.buffer = Buffer.from(this.buffer.subarray(start));
        return events;
      }
      const header = this.buffer.subarray(headerStart, newline).toString('latin1');
      if (!/^\d{1,20}$/.test(header)) return this.fail(events, `a frame length that is not a number (${JSON.stringify(header.slice(0, 24))})`);
      const length = Number(header);
      if (length > this.maxFrameBytes) return this.fail(events, `a frame of ${length} bytes (more than the limit of ${this.maxFrameBytes})`);
      if (this.buffer.length < newline + 1 + length) {
        this.buffer = Buffer.from(this.buffer.subarray(start));
        return events;
      }
      const payload = this.buffer.subarray(newline + 1, newline + 1 + length).toString('utf8');
      this.buffer = this.buffer.subarray(newline + 1 + length);
      let frame: unknown;
      try {
        frame = JSON.parse(payload);
      } catch {
        return this.fail(events, `a frame that is not JSON (${JSON.stringify(payload.slice(0, 40))})`);
      }
      if (typeof frame !== 'object' || frame === null || Array.isArray(frame)) return this.fail(events, 'a frame that is not a JSON object');
      events.push({ kind: 'frame', frame: frame as FrameObject });
    }
  }

  private fail(events: FrameEvent[], reason: string): FrameEvent[] {
    this.broken = reason;
    this.buffer = Buffer.alloc(0);
    events.push({ kind: 'malformed', reason });
    return events;
  }

  private addNoise(bytes: Buffer): void {
    if (bytes.length) this.noiseText = (this.noiseText + bytes.subarray(-NOISE_BYTES).toString('utf8')).slice(-NOISE_BYTES);
  }
}
