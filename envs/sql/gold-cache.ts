import type { QueryOutcome } from './backend.js';

/**
 * Gold results per (backend, database, gold query), for backends whose data no session can
 * change. Only repeatable reads are cached (see statement-kind.ts); concurrent requests
 * for one key share one run. Shared by every env on the same backend.
 */
export class SqlGoldCache {
  private readonly results = new Map<string, QueryOutcome>();
  private readonly inFlight = new Map<string, Promise<QueryOutcome>>();

  async get(key: string, run: () => Promise<QueryOutcome>): Promise<{ outcome: QueryOutcome; cached: boolean }> {
    const hit = this.results.get(key);
    if (hit) return { outcome: hit, cached: true };
    let flight = this.inFlight.get(key);
    if (!flight) {
      flight = run().then((outcome) => {
        // A result cut short by the time limit says nothing about the next run.
        if (!(outcome.kind === 'error' && outcome.timedOut)) this.results.set(key, outcome);
        return outcome;
      });
      this.inFlight.set(key, flight);
      flight.finally(() => this.inFlight.delete(key)).catch(() => undefined);
    }
    return { outcome: await flight, cached: false };
  }

  get size(): number {
    return this.results.size;
  }
}
