/**
 * The crash test: a child process appends to a persisted replay buffer in a loop and is
 * killed with SIGKILL at an arbitrary moment; reopening must find every transition whose
 * append returned (at most the one being written is lost), in order and intact.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../setup/temp-dirs.js';
import { ReplayBuffer } from '../../training/buffer/replay-buffer.js';
import { numberedTransition } from './fixtures/transitions.js';

const WRITER = join(import.meta.dirname, 'fixtures', 'buffer-writer.ts');

/** Runs the writer from `start` until it has printed `atLeast` appends, then SIGKILLs it. @returns the last number whose append had returned. */
function writeThenKill(dir: string, start: number, atLeast: number): Promise<number> {
  const ackFile = join(dir, `acks-${start}.txt`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', WRITER, dir, String(start), ackFile], { stdio: ['ignore', 'pipe', 'pipe'] });
    let acked = start - 1;
    let pending = '';
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.on('data', (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop()!;
      if (lines.length > 0) acked = Number(lines.at(-1));
      if (acked - start + 1 >= atLeast && !child.killed) child.kill('SIGKILL');
    });
    child.on('exit', (code, signal) => {
      if (signal !== 'SIGKILL') return reject(new Error(`writer exited with ${code}: ${stderr}`));
      const lines = readFileSync(ackFile, 'utf8').split('\n').filter((l) => l !== '');
      resolve(Number(lines.at(-1) ?? start - 1));
    });
  });
}

describe('replay buffer crash safety', () => {
  it('loses at most the record being written when the writer is SIGKILLed, every time', async () => {
    const dir = tempDir('buffer-crash-');
    let next = 0;
    for (let round = 0; round < 3; round++) {
      const acked = await writeThenKill(dir, next, 1_500 + round * 700);
      const { buffer } = ReplayBuffer.open(dir, { capacity: 1_000_000 });
      const got = [...buffer.transitions()];
      buffer.close();
      expect(got.length).toBeGreaterThanOrEqual(acked + 1);
      expect(got.length).toBeLessThanOrEqual(acked + 2);
      got.forEach((t, n) => expect(t).toEqual(numberedTransition(n)));
      next = got.length;
    }
  }, 120_000);
});
