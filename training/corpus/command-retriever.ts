/**
 * Candidate commands for a query that no demonstration showed: the commands of the `k`
 * descriptions most like the query (BM25), each adapted to the query's slots and to what
 * the episode observed (see slot-filling.ts). Top hits are cached per query.
 */
import { Bm25Index } from './retrieval.js';
import { adaptCommand, querySlots } from './slot-filling.js';
import type { TextPair } from './near-duplicates.js';

export class CommandRetriever {
  private readonly index: Bm25Index;
  private readonly hits = new Map<string, number[]>();

  constructor(readonly pairs: readonly TextPair[]) {
    this.index = new Bm25Index(pairs.map((p) => p.description));
  }

  /** Indices of the `k` pairs whose descriptions best match `query`, best first; `exclude` skips pairs (leave-one-out). */
  nearest(query: string, k: number, exclude?: number): number[] {
    const key = `${k}\u0000${exclude ?? ''}\u0000${query}`;
    let found = this.hits.get(key);
    if (!found) {
      found = this.index.search(query, k, exclude === undefined ? undefined : (doc) => doc === exclude).map((h) => h.doc);
      if (this.hits.size > 50_000) this.hits.clear();
      this.hits.set(key, found);
    }
    return found;
  }

  /**
   * The commands of the `k` nearest pairs adapted to `query` (and to `observation`, the
   * episode's last output, for file paths), distinct, best first.
   */
  commandsFor(query: string, k: number, options: { observation?: string; exclude?: number } = {}): string[] {
    const slots = querySlots(query, options.observation);
    return [...new Set(this.nearest(query, k, options.exclude).map((i) => adaptCommand(this.pairs[i]!.command, slots)))];
  }
}
