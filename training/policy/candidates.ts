/**
 * The actions a candidate-scoring policy chooses among: every distinct action seen in the
 * demonstrations it was built from, `submit`, and exploratory actions of the env — fixed
 * ones (ls, SHOW TABLES, dir()) and ones read off the last observation (cat a file it
 * listed, DESCRIBE a table it showed).
 */

type Exploration = { fixed: readonly string[]; fromObservation: (observation: string) => string[] };

const PATH = /\/(?:[\w.-]+\/)*[\w.-]+/g;
/** A table name alone on a line (`| users |`, `users`) or in a Python tuple (`('users',)`). */
const TABLE_NAME = /^\|?\s*([A-Za-z_]\w*)\s*\|?$|\('([A-Za-z_]\w*)',?\)/gm;
const MAX_DERIVED = 4;

const firstDistinct = (items: Iterable<string>, limit: number) => [...new Set(items)].slice(0, limit);

/** Exploratory actions per env name; an env without an entry gets none. */
export const EXPLORATION: Readonly<Record<string, Exploration>> = {
  bash: {
    fixed: ['ls', 'ls -la /testbed', 'find /testbed -maxdepth 2', 'pwd'],
    fromObservation: (obs) => firstDistinct([...obs.matchAll(PATH)].map((m) => m[0]).filter((p) => /\.\w+$/.test(p)), MAX_DERIVED).map((p) => `cat ${p}`),
  },
  ctf: {
    fixed: ['ls -la', 'find . -maxdepth 2 -type f', 'pwd'],
    fromObservation: (obs) => firstDistinct([...obs.matchAll(PATH)].map((m) => m[0]), MAX_DERIVED).map((p) => `cat ${p}`),
  },
  sql: {
    fixed: ['SHOW TABLES'],
    fromObservation: (obs) => firstDistinct([...obs.matchAll(TABLE_NAME)].map((m) => (m[1] ?? m[2])!), MAX_DERIVED).map((t) => `DESCRIBE ${t}`),
  },
  python: {
    fixed: ['print(dir())', 'help()'],
    fromObservation: () => [],
  },
};

export class CandidateSet {
  /** The actions offered in every state, in a stable order. */
  readonly fixed: readonly string[];

  /** @param harvested actions from demonstrations, in first-seen order. */
  constructor(readonly env: string, readonly harvested: readonly string[]) {
    this.fixed = [...new Set([...harvested, 'submit', ...(EXPLORATION[env]?.fixed ?? [])])];
  }

  /** The candidates in a state whose last observation is `observation` (the query before any action). */
  forState(observation: string, step: number): string[] {
    if (step === 0) return this.fixed.slice();
    const derived = EXPLORATION[this.env]?.fromObservation(observation) ?? [];
    return [...new Set([...this.fixed, ...derived])];
  }
}

/** Distinct actions of the given episodes, in first-seen order. */
export function harvestActions(episodes: readonly { actions: readonly string[] }[]): string[] {
  return [...new Set(episodes.flatMap((e) => e.actions))];
}
