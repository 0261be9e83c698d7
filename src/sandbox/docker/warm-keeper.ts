/**
 * The keeper of parked sandboxes (see warm-sandboxes.ts): started detached by the process
 * that parks them, it removes each one when its time is up and exits when none is left.
 * One keeper per host at a time (a pid file in the channel root); a second one exits at once.
 *
 * Usage: node warm-keeper.js <engine socket path>
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connectEngine } from './engine.js';
import { channelRoot } from './fifo-channel.js';
import { removeExpiredWarm } from './warm-sandboxes.js';
import { processAlive } from '../lifecycle/process-alive.js';

/** The longest the keeper sleeps between two looks (a sandbox parked meanwhile may expire sooner). */
const MAX_SLEEP_MS = 5_000;

/** @returns false when another keeper is alive. */
function takeLock(file: string): boolean {
  try {
    const other = Number(readFileSync(file, 'utf8'));
    if (Number.isInteger(other) && other !== process.pid && processAlive(other)) return false;
  } catch {
    // No keeper yet.
  }
  mkdirSync(join(file, '..'), { recursive: true });
  writeFileSync(file, String(process.pid));
  return true;
}

async function keep(socketPath: string): Promise<void> {
  const lock = join(channelRoot(), '.warm-keeper.pid');
  if (!takeLock(lock)) return;
  try {
    const docker = await connectEngine(`unix://${socketPath}`);
    for (;;) {
      const { nextExpiry } = await removeExpiredWarm(docker);
      if (nextExpiry === undefined) return;
      const wait = Math.min(Math.max(nextExpiry - Date.now(), 50), MAX_SLEEP_MS);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  } finally {
    if (readFileSync(lock, 'utf8') === String(process.pid)) rmSync(lock, { force: true });
  }
}

const socketPath = process.argv[2];
if (!socketPath) {
  process.stderr.write('usage: warm-keeper.js <engine socket path>\n');
  process.exit(2);
}
// An engine that stops answering ends the keeper: the next parking process starts another.
keep(socketPath).then(
  () => process.exit(0),
  () => process.exit(1),
);
