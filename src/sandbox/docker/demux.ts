/**
 * Incremental parser for Docker's multiplexed attach stream (used when a process has no
 * TTY): frames of an 8-byte header — stream type, three zero bytes, big-endian payload
 * length — followed by the payload. Stdout and stderr payloads are delivered in arrival
 * order through one callback, which is what an observation wants.
 */
export class MultiplexedStreamParser {
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly onPayload: (payload: Buffer, stream: 1 | 2) => void) {}

  push(chunk: Buffer): void {
    const data = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    let offset = 0;
    while (data.length - offset >= 8) {
      const type = data[offset];
      const size = data.readUInt32BE(offset + 4);
      if (data.length - offset - 8 < size) break;
      if (size > 0) {
        this.onPayload(data.subarray(offset + 8, offset + 8 + size), type === 2 ? 2 : 1);
      }
      offset += 8 + size;
    }
    this.pending = offset === data.length ? Buffer.alloc(0) : Buffer.from(data.subarray(offset));
  }
}
