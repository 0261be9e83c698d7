import { GoldStore, type GoldKey } from '../../src/golds/gold-store.js';
import type { QueryOutcome } from './backend.js';

/** How a {@link QueryOutcome} is written to and read from a {@link GoldStore}; anything else read back is no entry. */
export const SQL_OUTCOME_CODEC = {
  encode: (outcome: QueryOutcome): unknown => outcome,
  decode(stored: unknown): QueryOutcome | undefined {
    const s = stored as Record<string, unknown> | null;
    if (!s || typeof s !== 'object') return undefined;
    const strings = (value: unknown): value is string[] => Array.isArray(value) && value.every((v) => typeof v === 'string');
    if (s.kind === 'rows' && strings(s.columns) && Array.isArray(s.rows) && s.rows.every(strings) && (s.truncated === false || s.truncated === 'rows' || s.truncated === 'bytes')) {
      return { kind: 'rows', columns: s.columns, rows: s.rows, truncated: s.truncated };
    }
    if (s.kind === 'ok' && typeof s.affectedRows === 'number') return { kind: 'ok', affectedRows: s.affectedRows };
    // A gold stopped by its time limit is never stored (see SqlGoldCache).
    if (s.kind === 'error' && typeof s.message === 'string' && s.timedOut === false) return { kind: 'error', message: s.message, timedOut: false };
    return undefined;
  },
};

/** A SQL gold store in `dir`: entries verified on the harness connection to a fixed-data server. */
export function sqlGoldStore(dir: string): GoldStore<QueryOutcome> {
  return new GoldStore(dir, SQL_OUTCOME_CODEC, 'fixed-data-server');
}

const timedOut = (outcome: QueryOutcome) => outcome.kind === 'error' && outcome.timedOut;

/** Two outcomes of the same gold that say the same. */
function sameOutcome(a: QueryOutcome, b: QueryOutcome): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * Gold results per (backend, database, gold query), for backends whose data no session can
 * change. Only repeatable reads are cached (see statement-kind.ts); concurrent requests
 * for one key share one run. Shared by every env on the same backend.
 *
 * With a {@link GoldStore} and a disk key (everything the result depends on: the server
 * image's tag and id, the database, the gold, the limits), a gold not yet in memory is
 * looked up on disk; one that is not there runs twice, one run after the other, and is
 * stored when both runs agree (a result cut by the time limit never is), so a later process
 * on a new server from the same image trusts it without running it. When they disagree, that
 * is stored too, and the gold runs afresh at every score (in this process and later ones).
 */
export class SqlGoldCache {
  private readonly results = new Map<string, QueryOutcome>();
  private readonly inFlight = new Map<string, Promise<{ outcome: QueryOutcome; fromDisk: boolean; stable?: boolean }>>();
  /** Golds whose two runs disagreed: run at every score. */
  private readonly unstable = new Set<string>();

  constructor(readonly store?: GoldStore<QueryOutcome>) {}

  /**
   * `run` runs the gold on the harness connection. @returns the outcome, and whether it came
   * from a cache (memory or disk) rather than a run now.
   */
  async get(key: string, run: () => Promise<QueryOutcome>, diskKey?: GoldKey): Promise<{ outcome: QueryOutcome; cached: boolean }> {
    const hit = this.results.get(key);
    if (hit) return { outcome: hit, cached: true };
    if (this.unstable.has(key)) return { outcome: await run(), cached: false };
    let flight = this.inFlight.get(key);
    if (!flight) {
      flight = this.resolve(diskKey, run).then((resolved) => {
        // A result cut short by the time limit says nothing about the next run.
        if (resolved.stable === false) this.unstable.add(key);
        else if (!timedOut(resolved.outcome)) this.results.set(key, resolved.outcome);
        return resolved;
      });
      this.inFlight.set(key, flight);
      flight.finally(() => this.inFlight.delete(key)).catch(() => undefined);
      const { outcome, fromDisk } = await flight;
      return { outcome, cached: fromDisk };
    }
    return { outcome: (await flight).outcome, cached: false };
  }

  /**
   * From disk, else run (twice, when there is a store to keep the verdict in).
   * `stable`: false when two runs disagreed (now or when stored): the gold runs at every score.
   */
  private async resolve(diskKey: GoldKey | undefined, run: () => Promise<QueryOutcome>): Promise<{ outcome: QueryOutcome; fromDisk: boolean; stable?: boolean }> {
    const store = diskKey ? this.store : undefined;
    if (!store) return { outcome: await run(), fromDisk: false };
    const stored = await store.get(diskKey!);
    if (stored?.stable) return { outcome: stored.outcome, fromDisk: true, stable: true };
    if (stored) return { outcome: await run(), fromDisk: false, stable: false };
    const first = await run();
    if (timedOut(first)) return { outcome: first, fromDisk: false };
    const second = await run();
    if (timedOut(second)) return { outcome: second, fromDisk: false };
    const stable = sameOutcome(first, second);
    await store.put(diskKey!, stable ? { stable, outcome: first, verifiedIn: 'fixed-data-server' } : { stable, verifiedIn: 'fixed-data-server' });
    return { outcome: second, fromDisk: false, stable };
  }

  get size(): number {
    return this.results.size;
  }
}
