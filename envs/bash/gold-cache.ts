import { GoldStore, type GoldKey } from '../../src/golds/gold-store.js';
import type { BashOutcome, FileChange } from './reward.js';

/** How a {@link BashOutcome} is written to and read from a {@link GoldStore} (hashes as pairs). */
export const BASH_OUTCOME_CODEC = {
  encode: (outcome: BashOutcome): unknown => ({ observation: outcome.observation, changes: outcome.changes, hashes: [...outcome.hashes] }),
  decode(stored: unknown): BashOutcome | undefined {
    const s = stored as { observation?: unknown; changes?: unknown; hashes?: unknown } | null;
    if (!s || (typeof s.observation !== 'string' && s.observation !== null)) return undefined;
    const pairs = (value: unknown): value is [string, string][] =>
      Array.isArray(value) && value.every((p) => Array.isArray(p) && p.length === 2 && typeof p[0] === 'string' && typeof p[1] === 'string');
    if (!pairs(s.changes) || !pairs(s.hashes)) return undefined;
    return { observation: s.observation, changes: s.changes as FileChange[], hashes: new Map(s.hashes) };
  },
};

/** A bash gold store in `dir`. */
export function bashGoldStore(dir: string): GoldStore<BashOutcome> {
  return new GoldStore(dir, BASH_OUTCOME_CODEC);
}

/**
 * Gold outcomes per task. A gold command runs in a clean sandbox of the same image each
 * time, so its outcome depends only on (image, command, execution mode) — unless the
 * command itself is non-deterministic. So the first request runs it twice, one run after the
 * other, each in a clean sandbox (from the env's pool, restored in place, or new): when both
 * runs agree exactly the outcome is kept; otherwise the task is marked non-deterministic and
 * every later request runs the gold again. The runs are sequential so that a pool shared by
 * n envs, each holding one sandbox, never deadlocks with every env waiting for a second one.
 *
 * With a {@link GoldStore}, both verdicts are also kept on disk under the task's full key
 * (see {@link GoldKey}), and a later process trusts them without running anything.
 */
export class GoldCache {
  private readonly settled = new Map<string, BashOutcome>();
  private readonly unstable = new Set<string>();
  private readonly inFlight = new Map<string, Promise<{ outcome: BashOutcome; cached: boolean }>>();

  constructor(readonly store?: GoldStore<BashOutcome>) {}

  /**
   * `runGold` must start from a clean sandbox on every call. `diskKey`: everything the
   * outcome depends on, for the store (without one, or without a store, nothing is kept on disk).
   * @returns the outcome, and whether it came from a cache (memory or disk) rather than a run now.
   */
  async get(key: string, runGold: () => Promise<BashOutcome>, diskKey?: GoldKey): Promise<{ outcome: BashOutcome; cached: boolean }> {
    const settled = this.settled.get(key);
    if (settled) return { outcome: settled, cached: true };
    if (this.unstable.has(key)) return { outcome: await runGold(), cached: false };
    let flight = this.inFlight.get(key);
    if (!flight) {
      flight = this.verify(key, runGold, diskKey);
      this.inFlight.set(key, flight);
      flight.finally(() => this.inFlight.delete(key)).catch(() => undefined);
    }
    return flight;
  }

  private async verify(key: string, runGold: () => Promise<BashOutcome>, diskKey: GoldKey | undefined): Promise<{ outcome: BashOutcome; cached: boolean }> {
    const store = diskKey ? this.store : undefined;
    const stored = await store?.get(diskKey!);
    if (stored?.stable) {
      this.settled.set(key, stored.outcome);
      return { outcome: stored.outcome, cached: true };
    }
    if (stored) {
      this.unstable.add(key);
      return { outcome: await runGold(), cached: false };
    }
    const first = await runGold();
    const second = await runGold();
    const stable = sameOutcome(first, second);
    if (stable) this.settled.set(key, first);
    else this.unstable.add(key);
    await store?.put(diskKey!, stable ? { stable, outcome: first } : { stable });
    return { outcome: first, cached: false };
  }

  /** True once the gold for `key` was seen to differ between two clean runs (now or, with a store, in an earlier process). */
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
