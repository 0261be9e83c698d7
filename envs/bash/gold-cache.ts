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

/** One run of a gold command: its outcome, how long the command took, and whether it ran in a new sandbox (see GoldVerification). */
export interface GoldRun {
  outcome: BashOutcome;
  durationMs: number;
  inNewSandbox: boolean;
}

/**
 * Gold outcomes per task. A gold command runs in a clean sandbox of the same image each
 * time, so its outcome depends only on (image, command, execution mode) — unless the
 * command itself is non-deterministic. So the first request runs it twice, one run after the
 * other, each in a clean sandbox (a new one: see GoldVerification): when both
 * runs agree exactly the outcome is kept; otherwise the task is marked non-deterministic and
 * every later request runs the gold again. The runs are sequential so that a pool shared by
 * n envs, each holding one sandbox, never deadlocks with every env waiting for a second one.
 * How long the longer of the two runs took is kept with the verdict ({@link durationMs}).
 *
 * With a {@link GoldStore}, both verdicts are also kept on disk under the task's full key
 * (see {@link GoldKey}), when both runs ran in new sandboxes, and a later process trusts them
 * without running anything.
 */
export class GoldCache {
  private readonly settled = new Map<string, BashOutcome>();
  private readonly unstable = new Set<string>();
  private readonly durations = new Map<string, number>();
  private readonly inFlight = new Map<string, Promise<{ outcome: BashOutcome; cached: boolean }>>();

  constructor(readonly store?: GoldStore<BashOutcome>) {}

  /**
   * `runGold` must start from a clean sandbox on every call. `diskKey`: everything the
   * outcome depends on, for the store (without one, or without a store, nothing is kept on disk).
   * @returns the outcome, and whether it came from a cache (memory or disk) rather than a run now.
   */
  async get(key: string, runGold: () => Promise<GoldRun>, diskKey?: GoldKey): Promise<{ outcome: BashOutcome; cached: boolean }> {
    const settled = this.settled.get(key);
    if (settled) return { outcome: settled, cached: true };
    if (this.unstable.has(key)) return { outcome: (await runGold()).outcome, cached: false };
    let flight = this.inFlight.get(key);
    if (!flight) {
      flight = this.verify(key, runGold, diskKey);
      this.inFlight.set(key, flight);
      flight.finally(() => this.inFlight.delete(key)).catch(() => undefined);
    }
    return flight;
  }

  /**
   * How long the gold took when it was verified (the longer of its two runs), from memory or
   * the store (whose verdict is then kept in memory: a later {@link get} reads nothing);
   * undefined when it was never verified, or its entry predates the measurement.
   */
  async durationMs(key: string, diskKey?: GoldKey): Promise<number | undefined> {
    if (!this.durations.has(key) && !this.settled.has(key) && !this.unstable.has(key)) await this.load(key, diskKey);
    return this.durations.get(key);
  }

  /** Takes the store's entry for `diskKey` into memory. @returns whether there was one. */
  private async load(key: string, diskKey: GoldKey | undefined): Promise<boolean> {
    const stored = diskKey ? await this.store?.get(diskKey) : undefined;
    if (!stored) return false;
    if (stored.stable) this.settled.set(key, stored.outcome);
    else this.unstable.add(key);
    if (stored.durationMs !== undefined) this.durations.set(key, stored.durationMs);
    return true;
  }

  private async verify(key: string, runGold: () => Promise<GoldRun>, diskKey: GoldKey | undefined): Promise<{ outcome: BashOutcome; cached: boolean }> {
    if (await this.load(key, diskKey)) {
      const settled = this.settled.get(key);
      return settled ? { outcome: settled, cached: true } : { outcome: (await runGold()).outcome, cached: false };
    }
    const first = await runGold();
    const second = await runGold();
    const stable = sameOutcome(first.outcome, second.outcome);
    const durationMs = Math.max(first.durationMs, second.durationMs);
    if (stable) this.settled.set(key, first.outcome);
    else this.unstable.add(key);
    this.durations.set(key, durationMs);
    // Only an answer two new sandboxes gave is written down for later processes.
    const store = diskKey && first.inNewSandbox && second.inNewSandbox ? this.store : undefined;
    const verifiedIn = 'new-sandboxes' as const;
    await store?.put(diskKey!, stable ? { stable, outcome: first.outcome, durationMs, verifiedIn } : { stable, durationMs, verifiedIn });
    return { outcome: first.outcome, cached: false };
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
