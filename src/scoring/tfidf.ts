/**
 * TF-IDF cosine similarity of two texts, bit-for-bit as scikit-learn computes it.
 *
 * InterCode scores an agent's last observation against the gold one with
 * `TfidfVectorizer().fit_transform([a, b])` and reads entry [0][1] of `m * m.T`, all
 * defaults. Reproducing that exactly means following sklearn's and scipy's order of
 * floating-point operations, not just the formula:
 *
 * 1. Tokens: lowercase (`str.lower()`), then maximal runs of two or more word
 *    characters (`(?u)\b\w\w+\b`; Python's `\w` is letters, numbers and `_`).
 * 2. Weights: `count * idf`, `idf = ln(3 / (df + 1)) + 1` (n = 2 documents, smoothed).
 * 3. Row order: CountVectorizer numbers terms by first occurrence across both texts
 *    and sorts each row by that number; relabelling the columns alphabetically keeps
 *    that storage order, and the sparse product with the idf diagonal reverses it. So
 *    each row is stored newest-first-occurrence first.
 * 4. L2 norm: the sum of squares in storage order, `sqrt`, then each weight divided.
 * 5. Dot product: over text a's storage order, adding `x_a * x_b` for shared terms.
 *
 * Checked against sklearn 1.2.1 / scipy 1.10.1 fixtures (test/fixtures/scoring).
 */

/** sklearn's message when neither text contains a token. */
const EMPTY_VOCABULARY_MESSAGE = 'empty vocabulary; perhaps the documents only contain stop words';

/**
 * Neither text has a token of two or more word characters, so scikit-learn raises
 * `ValueError("empty vocabulary; ...")`. A scoring outcome, not broken infrastructure,
 * hence a plain `Error`.
 */
export class EmptyVocabularyError extends Error {
  constructor() {
    super(EMPTY_VOCABULARY_MESSAGE);
    this.name = 'EmptyVocabularyError';
  }
}

/** Python's `\w` on `str`: letters, numbers (Nd, Nl, No) and underscore; two or more. */
const TOKEN = /[\p{L}\p{N}_]{2,}/gu;

/**
 * The tokens scikit-learn's default analyzer yields for `text`, in order: lowercase,
 * then every maximal run of two or more word characters.
 */
export function tfidfTokens(text: string): string[] {
  return text.toLowerCase().match(TOKEN) ?? [];
}

interface Entry {
  term: string;
  weight: number;
}

/**
 * Cosine similarity of the TF-IDF vectors of `a` and `b`, fitted on exactly these two
 * texts with scikit-learn's defaults. Equals sklearn's
 * `(m * m.T).toarray()[0][1]` for `m = TfidfVectorizer().fit_transform([a, b])`, to
 * the last bit in every fixture. In [0, 1] up to rounding (identical texts may give
 * 1.0000000000000002, as in sklearn). A text without tokens scores 0 against any other.
 *
 * @throws {EmptyVocabularyError} when neither text has a token (sklearn's ValueError).
 */
export function tfidfCosine(a: string, b: string): number {
  const order = new Map<string, number>();
  const counts = [a, b].map((text) => {
    const count = new Map<string, number>();
    for (const token of tfidfTokens(text)) {
      if (!order.has(token)) order.set(token, order.size);
      count.set(token, (count.get(token) ?? 0) + 1);
    }
    return count;
  });
  if (order.size === 0) throw new EmptyVocabularyError();

  const [rowA, rowB] = counts.map((count) => normalizedRow(count, counts, order));
  const weightsB = new Map(rowB!.map((e) => [e.term, e.weight]));
  let dot = 0;
  for (const { term, weight } of rowA!) {
    const other = weightsB.get(term);
    if (other !== undefined) dot += weight * other;
  }
  return dot;
}

/** One row of the fitted matrix, in scipy's storage order, L2-normalised. */
function normalizedRow(
  count: Map<string, number>,
  all: Map<string, number>[],
  order: Map<string, number>,
): Entry[] {
  const n = all.length + 1; // smooth_idf: one extra document containing every term
  const row = [...count]
    .sort(([s], [t]) => order.get(t)! - order.get(s)!)
    .map(([term, tf]) => {
      const df = all.filter((c) => c.has(term)).length + 1;
      return { term, weight: tf * (Math.log(n / df) + 1) };
    });
  let sumOfSquares = 0;
  for (const { weight } of row) sumOfSquares += weight * weight;
  if (sumOfSquares === 0) return row;
  const norm = Math.sqrt(sumOfSquares);
  return row.map(({ term, weight }) => ({ term, weight: weight / norm }));
}

/**
 * InterCode's answer-similarity rule for bash tasks:
 *
 * ```python
 * try:    sim = tfidf_cosine(agent_obs, eval_obs)
 * except: sim = 1 if agent_obs == eval_obs else 0
 * ```
 *
 * sklearn raises for `None` inputs and for an empty vocabulary, so those fall back to
 * equality (`None == None` is true; `"" == ""` too). Never throws.
 */
export function answerSimilarity(agentObs: string | null, goldObs: string | null): number {
  if (agentObs !== null && goldObs !== null) {
    try {
      return tfidfCosine(agentObs, goldObs);
    } catch (error) {
      if (!(error instanceof EmptyVocabularyError)) throw error;
    }
  }
  return agentObs === goldObs ? 1 : 0;
}
