/**
 * The buffer bench: writes N transitions (default one million) to a persisted replay
 * buffer, closes it, reopens it from disk and checks every transition came back; reports
 * the time of each direction and the size on disk. Transitions look like bash ones
 * (an 80-character query, observations of 40–400 characters, a short command).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ReplayBuffer } from '../training/buffer/replay-buffer.js';
import type { Transition } from '../training/buffer/types.js';
import type { Bench, BenchIO } from './types.js';
import { parseBenchArgs, positiveNumber } from './bench-args.js';

/** The `--json` output. */
export interface BufferBenchResult {
  transitions: number;
  /** Transitions per write (one write(2) per batch). */
  batch: number;
  writeSec: number;
  readSec: number;
  bytes: number;
  bytesPerTransition: number;
}

const USAGE = `Usage: npm run bench -- buffer [--transitions N] [--batch B] [--json]

Round-trips N transitions (default 1000000) through a replay buffer persisted as
append-only msgpack segments in a temporary folder: adds them B at a time (default 1000;
B=1 makes one write per transition), closes, reopens (reading and checksumming every
record), checks each came back equal, and removes the folder.
--json prints {"transitions","batch","writeSec","readSec","bytes","bytesPerTransition"}.
`;

const WORDS = ['find', '/testbed', '-name', '*.log', 'grep', 'ERROR', 'wc', '-l', 'sort', 'uniq', 'config', 'data', 'report', 'backup', 'src'];

function transition(n: number): Transition {
  const word = (k: number) => WORDS[(n * 7 + k * 13) % WORDS.length]!;
  const text = (length: number) => Array.from({ length: Math.ceil(length / 6) }, (_, k) => word(k)).join(' ').slice(0, length);
  const step = n % 4;
  return {
    episode: `ep-${Math.floor(n / 4)}`,
    step,
    env: 'bash',
    taskId: String(n % 45),
    query: `${text(70)} #${n % 45}`,
    observation: text(40 + ((n * 31) % 360)),
    previousAction: step === 0 ? '' : `${word(1)} ${word(2)} ${word(3)}`,
    action: step === 3 ? 'submit' : `${word(4)} ${word(5)} | ${word(6)}`,
    reward: step === 3 ? (n % 100) / 100 : 0,
    nextObservation: text(40 + ((n * 17) % 360)),
    terminated: step === 3,
    truncated: false,
    info: { exitCode: n % 3 === 0 ? 1 : 0, durationMs: n % 50 },
  };
}

function parse(args: readonly string[]): { transitions: number; batch: number; json: boolean; help: boolean } {
  const values = parseBenchArgs('buffer', args, { transitions: { type: 'string' }, batch: { type: 'string' } });
  if (values === 'help') return { transitions: 0, batch: 0, json: false, help: true };
  return {
    transitions: positiveNumber('--transitions', values.transitions, 1_000_000, true),
    batch: positiveNumber('--batch', values.batch, 1000, true),
    json: values.json === true,
    help: false,
  };
}

export const bufferBench: Bench = {
  name: 'buffer',
  summary: 'round-trips a million transitions through a persisted replay buffer: write and read time, size on disk',
  async run(args: readonly string[], io: BenchIO): Promise<number> {
    let options;
    try {
      options = parse(args);
    } catch (error) {
      io.stderr.write(`bench buffer: ${(error as Error).message}\n\n${USAGE}`);
      return 2;
    }
    if (options.help) {
      io.stdout.write(USAGE);
      return 0;
    }
    const dir = mkdtempSync(join(tmpdir(), 'intercode-buffer-bench-'));
    try {
      const writeStart = performance.now();
      const { buffer } = ReplayBuffer.open(dir, { capacity: options.transitions });
      for (let start = 0; start < options.transitions; start += options.batch) {
        const end = Math.min(options.transitions, start + options.batch);
        buffer.addMany(Array.from({ length: end - start }, (_, i) => transition(start + i)));
      }
      const bytes = buffer.diskBytes;
      buffer.close();
      const writeSec = (performance.now() - writeStart) / 1000;
      const readStart = performance.now();
      const reopened = ReplayBuffer.open(dir, { capacity: options.transitions }).buffer;
      const readSec = (performance.now() - readStart) / 1000;
      let n = 0;
      for (const t of reopened.transitions()) {
        const expected = transition(n);
        if (t.observation !== expected.observation || t.step !== expected.step || t.reward !== expected.reward || t.info.durationMs !== expected.info.durationMs) {
          throw new Error(`transition ${n} came back different`);
        }
        n++;
      }
      reopened.close();
      if (n !== options.transitions) throw new Error(`${n} of ${options.transitions} transitions came back`);
      const result: BufferBenchResult = { transitions: n, batch: options.batch, writeSec, readSec, bytes, bytesPerTransition: bytes / n };
      if (options.json) io.stdout.write(`${JSON.stringify(result)}\n`);
      else io.stdout.write(`${n.toLocaleString('en')} transitions (batches of ${options.batch}): write ${writeSec.toFixed(2)} s, read ${readSec.toFixed(2)} s, ${(bytes / 2 ** 20).toFixed(1)} MiB on disk (${result.bytesPerTransition.toFixed(0)} B each)\n`);
      return 0;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
