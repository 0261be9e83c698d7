import type { GoldKey } from '../../src/golds/gold-store.js';
import type { GoldRun } from '../../src/golds/gold-verifier.js';
import type { ExecuteLimits, QueryOutcome, SqlBackend, SqlSession } from './backend.js';
import type { SqlGoldCache } from './gold-cache.js';
import { isRepeatableRead, isSessionNeutral } from './statement-kind.js';

/**
 * How statements run and rows convert (mariadb/session.ts, convert.ts, group-order.ts), as a
 * gold's disk key holds it: bump it when they change, so results stored before are not trusted.
 */
const SQL_EXECUTION = 1;

/** What running an env's golds needs: its backend and limits, and the shared cache with the image its disk entries are keyed by. */
export interface SqlGoldConfig {
  backend: SqlBackend;
  limits: ExecuteLimits;
  goldCache?: SqlGoldCache;
  goldStoreImage?: { tag: string; id: string | null };
}

/** What a gold run in the agent's session reads and changes of its episode. */
export interface TouchedSession {
  /** Whether the session may differ from a fresh one on the task's database. */
  touched(): boolean;
  touch(): void;
}

/**
 * An SQL env's gold results, run by the harness outside the agent's statements
 * ({@link SqlSession.verify}), from the shared cache when that provably gives the same: a
 * repeatable read on data no session can change, or on data the episode has not touched.
 */
export class SqlGoldRuns {
  constructor(private readonly config: SqlGoldConfig) {}

  /** The gold's result on `database` in the episode's `session`, with whether it came from the cache. */
  inSession(session: SqlSession, database: string | undefined, gold: string, episode: TouchedSession): Promise<{ outcome: QueryOutcome; cached: boolean }> {
    const { backend, limits, goldCache: cache } = this.config;
    const run = () => {
      // Writable embedded SQLite runs it in the agent's own connection (see SqlSession.verify).
      if (!backend.dataFixed && !isSessionNeutral(gold)) episode.touch();
      return session.verify(gold, limits);
    };
    if (!cache || (episode.touched() && !backend.dataFixed) || !isRepeatableRead(gold)) {
      return run().then((outcome) => ({ outcome, cached: false }));
    }
    return cache.get(this.cacheKey(database ?? '', gold), () => run().then((outcome) => this.goldRun(outcome)), this.diskKey(database ?? '', gold));
  }

  /**
   * The gold's result on the backend's original data: in a session of its own that has run
   * nothing (the backend's invariant), closed after; from the shared cache where that holds it.
   */
  async untouched(database: string | undefined, gold: string): Promise<QueryOutcome> {
    const { backend, limits, goldCache: cache } = this.config;
    const run = async () => {
      const session = await backend.openSession();
      try {
        if (database !== undefined) await session.useDatabase(database, false);
        return await session.verify(gold, limits);
      } finally {
        await session.close().catch(() => undefined);
      }
    };
    if (!cache || !isRepeatableRead(gold)) return run();
    return (await cache.get(this.cacheKey(database ?? '', gold), () => run().then((outcome) => this.goldRun(outcome)), this.diskKey(database ?? '', gold))).outcome;
  }

  /** A gold's run, as the cache keeps it: on a backend whose data no session changes, it ran where a new server's would. */
  private goldRun(outcome: QueryOutcome): GoldRun<QueryOutcome> {
    return this.config.backend.dataFixed ? { outcome, ranIn: 'fixed-data-server' } : { outcome };
  }

  /** The shared cache's key of `gold`'s result on `database`'s original data. */
  private cacheKey(database: string, gold: string): string {
    return `${this.config.backend.identity}\0${database}\0${gold}`;
  }

  /**
   * Everything a gold's result on the read-only server depends on: the image (its data and
   * server), the database, the gold's text, the limits, and how statements are run
   * ({@link SQL_EXECUTION}); undefined when golds are not kept on disk.
   */
  private diskKey(database: string, gold: string): GoldKey | undefined {
    const { goldStoreImage: image, backend, limits } = this.config;
    if (!image || !backend.dataFixed) return undefined;
    const { timeoutMs, maxRows, maxBytes } = limits;
    return { env: 'sql', execution: SQL_EXECUTION, image: image.tag, imageId: image.id, database, gold, limits: { timeoutMs, maxRows, maxBytes } };
  }
}
