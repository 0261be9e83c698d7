import { GoldStore } from '../../src/golds/gold-store.js';
import { GoldVerifier, type GoldRules } from '../../src/golds/gold-verifier.js';
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

/**
 * A SQL gold's runs agree when their outcomes are equal; a result cut by the time limit says
 * nothing of the next run. Only repeatable reads are cached (see statement-kind.ts), on a
 * backend whose data no session can change, so without a store a gold runs once.
 */
export const SQL_GOLD_RULES: GoldRules<QueryOutcome> = {
  same: (a, b) => JSON.stringify(a) === JSON.stringify(b),
  inconclusive: (outcome) => outcome.kind === 'error' && outcome.timedOut,
  twiceInMemory: false,
};

/**
 * Gold results per (backend, database, gold query), shared by every env on the same backend
 * ({@link GoldVerifier}). With a store and a disk key (the server image's tag and id, the
 * database, the gold, the limits), a verdict of two runs on the harness connection is kept on
 * disk, so a later process on a new server from the same image trusts it without running it.
 */
export class SqlGoldCache extends GoldVerifier<QueryOutcome> {
  constructor(store?: GoldStore<QueryOutcome>) {
    super(SQL_GOLD_RULES, store);
  }
}
