import type { BashOutcome } from './reward.js';

/**
 * Gold outcomes per task. A gold command runs in a fresh sandbox from the same image each
 * time, so its outcome depends only on (image, command, execution mode) — unless the
 * command itself is non-deterministic. So the first request runs it twice, in two fresh
 * sandboxes: when both runs agree exactly the outcome is kept; otherwise the task is
 * marked non-deterministic and every later request runs the gold again.
 */
export class GoldCache {
  private readonly settled = new Map<string, BashOutcome>();
  private readonly unstable = new Set<string>();
  private readonly inFlight = new Map<string, Promise<BashOutcome>>();

  /** `runGold` must start from a fresh sandbox on every call. */
  async get(key: string, runGold: () => Promise<BashOutcome>): Promise<{ outcome: BashOutcome; cached: boolean }> {
    const settled = this.settled.get(key);
    if (settled) return { outcome: settled, cached: true };
    if (this.unstable.has(key)) return { outcome: await runGold(), cached: false };
    let flight = this.inFlight.get(key);
    if (!flight) {
      flight = Promise.all([runGold(), runGold()]).then(([a, b]) => {
        if (sameOutcome(a, b)) this.settled.set(key, a);
        else this.unstable.add(key);
        return a;
      });
      this.inFlight.set(key, flight);
      flight.finally(() => this.inFlight.delete(key)).catch(() => undefined);
    }
    return { outcome: await flight, cached: false };
  }

  /** True once the gold for `key` was seen to differ between two fresh runs. */
  isUnstable(key: string): boolean {
    return this.unstable.has(key);
  }
}

function sameOutcome(a: BashOutcome, b: BashOutcome): boolean {
  return (
    a.observation === b.observation &&
    JSON.stringify(a.changes) === JSON.stringify(b.changes) &&
    JSON.stringify([...a.hashes]) === JSON.stringify([...b.hashes])
  );
}
