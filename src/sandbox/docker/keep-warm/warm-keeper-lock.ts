/**
 * The pid file that makes the keeper of parked sandboxes (warm-keeper.ts) one per host:
 * `<channel root>/.warm-keeper.pid`.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { channelRoot } from '../fifo-channel.js';
import { processAlive } from '../../lifecycle/process-alive.js';

/** The keeper's pid file: one keeper per host at a time. */
export function keeperLock(): string {
  return join(channelRoot(), '.warm-keeper.pid');
}

/** The pid of the live keeper, if there is one. */
export function liveKeeper(): number | undefined {
  try {
    const pid = Number(readFileSync(keeperLock(), 'utf8'));
    return Number.isInteger(pid) && pid > 0 && processAlive(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** @returns false when another keeper is alive. */
export function takeLock(): boolean {
  const other = liveKeeper();
  if (other !== undefined && other !== process.pid) return false;
  mkdirSync(channelRoot(), { recursive: true });
  writeFileSync(keeperLock(), String(process.pid));
  return true;
}

export function releaseLock(): void {
  try {
    if (readFileSync(keeperLock(), 'utf8') === String(process.pid)) rmSync(keeperLock(), { force: true });
  } catch {
    // Gone already.
  }
}
