/**
 * The keeper of parked sandboxes (see warm-sandboxes.ts): started detached by the process
 * that parks them, it removes each one when its time is up and exits when none is left.
 * One keeper per host at a time (a pid file in the channel root); a second one exits at once.
 *
 * Usage: node warm-keeper.js <engine socket path>
 */
import { releaseLock, takeLock } from './warm-keeper-lock.js';

/** The longest the keeper sleeps between two looks (a sandbox parked meanwhile may expire sooner). */
const MAX_SLEEP_MS = 5_000;

/**
 * Removes expired parked sandboxes until none is parked. Before exiting it looks once more
 * after letting go of the lock: a sandbox parked meanwhile by a process that saw this keeper
 * alive (and so started none) is then seen here, and the keeper goes on if no other took over.
 */
async function keep(socketPath: string): Promise<void> {
  if (!takeLock()) return;
  try {
    // Loaded once the lock is taken: the engine's client is most of the keeper's start-up,
    // and the pid file is what says a keeper runs.
    const [{ connectEngine }, { removeExpiredWarm }] = await Promise.all([import('../engine.js'), import('./warm-sandboxes.js')]);
    const docker = await connectEngine(`unix://${socketPath}`);
    for (;;) {
      let { nextExpiry } = await removeExpiredWarm(docker);
      if (nextExpiry === undefined) {
        releaseLock();
        ({ nextExpiry } = await removeExpiredWarm(docker));
        if (nextExpiry === undefined || !takeLock()) return;
      }
      const wait = Math.min(Math.max(nextExpiry - Date.now(), 50), MAX_SLEEP_MS);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  } finally {
    releaseLock();
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
