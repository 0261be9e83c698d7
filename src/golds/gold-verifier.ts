import type { GoldKey, GoldStore, GoldVerification } from './gold-store.js';

/**
 * One run of a gold: its outcome, how long it took when measured, and where it ran
 * ({@link GoldVerification}; none: somewhere a store trusts nothing from, such as a sandbox
 * restored after an earlier episode).
 */
export interface GoldRun<T> {
  outcome: T;
  durationMs?: number;
  ranIn?: GoldVerification;
}

/** What an env says of its golds' outcomes; the rest of verifying is the same for every env. */
export interface GoldRules<T> {
  /** Two outcomes of one gold that say the same. */
  same(a: T, b: T): boolean;
  /** An outcome that says nothing of the next run (a time limit cut it): never kept, and it ends a verification. */
  inconclusive?(outcome: T): boolean;
  /**
   * Whether a gold whose verdict cannot be stored (no store, or no key for it) is still run
   * twice before its outcome is kept in memory; when false it runs once and that is kept.
   */
  twiceInMemory: boolean;
}

/**
 * Gold outcomes per task, verified once: a gold runs twice, one run after the other (a pool
 * shared by n envs, each holding one sandbox, never deadlocks with every env waiting for a
 * second one); when both runs agree its outcome is kept, otherwise the gold is marked
 * non-deterministic and runs again at every later request. Requests for one key while it is
 * verified share the verification. With a {@link GoldStore} and a disk key (everything the
 * outcome depends on), both verdicts are kept on disk when both runs ran where the store's
 * verdicts may come from, and a later process trusts them without running anything.
 * How long the longer of the two runs took is kept with the verdict.
 */
export class GoldVerifier<T> {
  private readonly settled = new Map<string, T>();
  private readonly unstable = new Set<string>();
  private readonly durations = new Map<string, number>();
  private readonly inFlight = new Map<string, Promise<{ outcome: T; cached: boolean }>>();

  constructor(
    private readonly rules: GoldRules<T>,
    readonly store?: GoldStore<T>,
  ) {}

  /**
   * `run` must start from where a new episode's gold would (a clean sandbox, the original
   * data) on every call.
   * @returns the outcome, and whether it came from a cache (memory or disk) rather than a run now.
   */
  async get(key: string, run: () => Promise<GoldRun<T>>, diskKey?: GoldKey): Promise<{ outcome: T; cached: boolean }> {
    const settled = this.settled.get(key);
    if (settled !== undefined) return { outcome: settled, cached: true };
    if (this.unstable.has(key)) return { outcome: (await run()).outcome, cached: false };
    let flight = this.inFlight.get(key);
    if (!flight) {
      flight = this.verify(key, run, diskKey);
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

  /** True once the gold for `key` was seen to differ between two runs (now or, with a store, in an earlier process). */
  isUnstable(key: string): boolean {
    return this.unstable.has(key);
  }

  /** How many golds' outcomes are kept in memory. */
  get size(): number {
    return this.settled.size;
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

  private async verify(key: string, run: () => Promise<GoldRun<T>>, diskKey: GoldKey | undefined): Promise<{ outcome: T; cached: boolean }> {
    if (await this.load(key, diskKey)) {
      const settled = this.settled.get(key);
      return settled !== undefined ? { outcome: settled, cached: true } : { outcome: (await run()).outcome, cached: false };
    }
    const store = diskKey ? this.store : undefined;
    const inconclusive = (outcome: T) => this.rules.inconclusive?.(outcome) === true;
    const first = await run();
    if (inconclusive(first.outcome)) return { outcome: first.outcome, cached: false };
    if (!store && !this.rules.twiceInMemory) {
      this.settled.set(key, first.outcome);
      return { outcome: first.outcome, cached: false };
    }
    const second = await run();
    if (inconclusive(second.outcome)) return { outcome: second.outcome, cached: false };
    const stable = this.rules.same(first.outcome, second.outcome);
    if (stable) this.settled.set(key, first.outcome);
    else this.unstable.add(key);
    const durationMs = first.durationMs !== undefined && second.durationMs !== undefined ? Math.max(first.durationMs, second.durationMs) : undefined;
    if (durationMs !== undefined) this.durations.set(key, durationMs);
    // Only what two runs where the store's verdicts may come from gave is written down for later processes.
    if (store && first.ranIn === store.trusted && second.ranIn === store.trusted) {
      const timing = durationMs === undefined ? {} : { durationMs };
      await store.put(diskKey!, stable ? { stable, outcome: first.outcome, verifiedIn: store.trusted, ...timing } : { stable, verifiedIn: store.trusted, ...timing });
    }
    return { outcome: second.outcome, cached: false };
  }
}
