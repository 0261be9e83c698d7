/**
 * A process's output as it comes, kept up to `maxBytes`: the first part is kept, and once
 * more comes the output is over its cap and nothing more is kept.
 */
export class CappedOutput {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private passed = false;
  /** Bytes read, kept or not (past the cap, the caller stops reading: a lower bound of what was written). */
  seen = 0;

  /** @param maxBytes what is kept at most (default: no limit). */
  constructor(private readonly maxBytes = Number.POSITIVE_INFINITY) {}

  /** Whether more came than the cap holds. */
  get over(): boolean {
    return this.passed;
  }

  /**
   * Keeps what of `chunk` fits (copied: a stream may reuse its buffer).
   * @returns false when the output is over its cap (the caller stops reading).
   */
  push(chunk: Buffer): boolean {
    this.seen += chunk.length;
    if (this.passed) return false;
    const room = this.maxBytes - this.kept;
    if (chunk.length > room) {
      if (room > 0) this.chunks.push(Buffer.from(chunk.subarray(0, room)));
      this.kept = this.maxBytes;
      this.passed = true;
      return false;
    }
    this.chunks.push(Buffer.from(chunk));
    this.kept += chunk.length;
    return true;
  }

  /** What was kept. */
  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}
