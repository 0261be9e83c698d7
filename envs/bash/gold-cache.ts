import { GoldStore } from '../../src/golds/gold-store.js';
import { GoldVerifier, type GoldRules, type GoldRun as GoldRunOf } from '../../src/golds/gold-verifier.js';
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

/** One run of a gold command: its outcome, how long it took, and where it ran (`new-sandboxes` when in a sandbox made for it). */
export type GoldRun = GoldRunOf<BashOutcome>;

/** A bash gold's two runs agree when observation, changes and hashes are all the same; it is verified twice even with no store. */
export const BASH_GOLD_RULES: GoldRules<BashOutcome> = {
  same: (a, b) => a.observation === b.observation && JSON.stringify(a.changes) === JSON.stringify(b.changes) && JSON.stringify([...a.hashes]) === JSON.stringify([...b.hashes]),
  // A gold command runs in a clean sandbox of the same image each time, so its outcome depends
  // only on (image, command, execution mode), unless the command itself is non-deterministic.
  twiceInMemory: true,
};

/** Bash gold outcomes per task ({@link GoldVerifier}); with a store, verdicts of runs in new sandboxes are kept on disk. */
export class GoldCache extends GoldVerifier<BashOutcome> {
  constructor(store?: GoldStore<BashOutcome>) {
    super(BASH_GOLD_RULES, store);
  }
}
