/**
 * BM25 retrieval over descriptions (Robertson & Zaragoza's Okapi BM25, k1 = 1.2, b = 0.75):
 * the commands whose descriptions best match a query. An inverted index over lower-cased
 * words, with a small stop-word list, so a query costs only the postings of its own words.
 */

const STOP_WORDS = new Set('a an the of in to and or for with from by on at is are be all any each that this which its it as into under their them those these than then its there'.split(' '));

/** Lower-cased content words of a text (stop words dropped), in order. */
export function queryTerms(text: string): string[] {
  return (text.toLowerCase().match(/[a-z0-9]+/g) ?? []).filter((w) => !STOP_WORDS.has(w));
}

export interface Hit {
  /** Index of the document in the list the index was built from. */
  doc: number;
  score: number;
}

export class Bm25Index {
  private readonly postings = new Map<string, { doc: number; tf: number }[]>();
  private readonly lengths: number[];
  private readonly meanLength: number;

  constructor(
    descriptions: readonly string[],
    private readonly k1 = 1.2,
    private readonly b = 0.75,
  ) {
    this.lengths = descriptions.map((text, doc) => {
      const terms = queryTerms(text);
      const counts = new Map<string, number>();
      for (const t of terms) counts.set(t, (counts.get(t) ?? 0) + 1);
      for (const [term, tf] of counts) {
        let list = this.postings.get(term);
        if (!list) this.postings.set(term, (list = []));
        list.push({ doc, tf });
      }
      return terms.length;
    });
    this.meanLength = this.lengths.reduce((s, n) => s + n, 0) / Math.max(1, this.lengths.length);
  }

  get size(): number {
    return this.lengths.length;
  }

  /**
   * The `k` best-scoring documents for `query`, best first (ties: lower index first);
   * documents for which `exclude` is true are skipped. Documents sharing no word score nothing and are not returned.
   */
  search(query: string, k: number, exclude?: (doc: number) => boolean): Hit[] {
    const scores = new Map<number, number>();
    const n = this.lengths.length;
    for (const term of new Set(queryTerms(query))) {
      const list = this.postings.get(term);
      if (!list) continue;
      const idf = Math.log(1 + (n - list.length + 0.5) / (list.length + 0.5));
      for (const { doc, tf } of list) {
        const norm = tf + this.k1 * (1 - this.b + (this.b * this.lengths[doc]!) / this.meanLength);
        scores.set(doc, (scores.get(doc) ?? 0) + (idf * tf * (this.k1 + 1)) / norm);
      }
    }
    const hits: Hit[] = [];
    for (const [doc, score] of scores) if (!exclude?.(doc)) hits.push({ doc, score });
    hits.sort((x, y) => y.score - x.score || x.doc - y.doc);
    return hits.slice(0, k);
  }
}
