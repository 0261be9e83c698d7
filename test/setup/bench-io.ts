/** A bench's standard output and error captured in memory, for tests that run a bench in-process. */
import { Writable } from 'node:stream';
import type { BenchIO } from '../../bench/types.js';

/** @returns the streams to hand a bench's `run`, and what was written to each so far. */
export function capturedBenchIO(): { io: BenchIO; out: () => string; err: () => string } {
  const written = { stdout: '', stderr: '' };
  const sink = (stream: keyof typeof written) =>
    new Writable({
      write(chunk, _encoding, done) {
        written[stream] += String(chunk);
        done();
      },
    });
  return { io: { stdout: sink('stdout'), stderr: sink('stderr') }, out: () => written.stdout, err: () => written.stderr };
}
