/**
 * Kendall's tau-b as `scipy.stats.kendalltau(x, y).statistic` computes it (variant "b",
 * ties counted in both lists), for lists of strings compared in code-point order as NumPy
 * compares its unicode arrays. Returns NaN where SciPy does: fewer than two items, or one
 * list made of a single repeated value.
 */

/** Code-point order (JS `<` compares UTF-16 units, which misorders astral characters). */
export function compareCodePoints(a: string, b: string): number {
  if (a === b) return 0;
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const ca = ia.next();
    const cb = ib.next();
    if (ca.done) return cb.done ? 0 : -1;
    if (cb.done) return 1;
    const d = ca.value.codePointAt(0)! - cb.value.codePointAt(0)!;
    if (d !== 0) return d;
  }
}

/** Dense ranks (1-based) of `values` in code-point order. */
function denseRanks(values: readonly string[]): number[] {
  const distinct = [...new Set(values)].sort(compareCodePoints);
  const rank = new Map(distinct.map((v, i) => [v, i + 1]));
  return values.map((v) => rank.get(v)!);
}

/** Σ t(t−1)/2 over runs of equal values in `sorted` (equal values adjacent). */
function tiedPairsInRuns(length: number, same: (i: number) => boolean): number {
  let total = 0;
  let run = 1;
  for (let i = 1; i <= length; i++) {
    if (i < length && same(i)) run += 1;
    else {
      total += (run * (run - 1)) / 2;
      run = 1;
    }
  }
  return total;
}

/**
 * Discordant pairs (i, j): x and y ordered the opposite way. With the items sorted by
 * (x, y), that is the number of strict inversions of y, counted with a Fenwick tree over
 * y's ranks in O(n log n) (SciPy counts the same pairs with a merge sort).
 */
function discordantPairs(order: readonly number[], ry: readonly number[], maxRank: number): number {
  const tree = new Float64Array(maxRank + 1);
  let seen = 0;
  let discordant = 0;
  for (const i of order) {
    const rank = ry[i]!;
    let notAbove = 0;
    for (let k = rank; k > 0; k -= k & -k) notAbove += tree[k]!;
    discordant += seen - notAbove;
    for (let k = rank; k <= maxRank; k += k & -k) tree[k]! += 1;
    seen += 1;
  }
  return discordant;
}

export function kendallTauB(x: readonly string[], y: readonly string[]): number {
  if (x.length !== y.length) throw new RangeError(`kendallTauB: lists differ in length (${x.length} vs ${y.length})`);
  const n = x.length;
  if (n === 0) return Number.NaN;
  const rx = denseRanks(x);
  const ry = denseRanks(y);
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => rx[a]! - rx[b]! || ry[a]! - ry[b]!);
  const sortedX = order.map((i) => rx[i]!);
  const sortedY = [...ry].sort((a, b) => a - b);
  const xTied = tiedPairsInRuns(n, (i) => sortedX[i] === sortedX[i - 1]);
  const yTied = tiedPairsInRuns(n, (i) => sortedY[i] === sortedY[i - 1]);
  const bothTied = tiedPairsInRuns(n, (i) => sortedX[i] === sortedX[i - 1] && ry[order[i]!] === ry[order[i - 1]!]);
  const total = (n * (n - 1)) / 2;
  if (xTied === total || yTied === total) return Number.NaN;
  const discordant = discordantPairs(order, ry, ry.reduce((max, r) => Math.max(max, r), 0));
  // SciPy: con − dis = tot − xtie − ytie + ntie − 2·dis, divided by √(tot−xtie)·√(tot−ytie) in that order.
  const conMinusDis = total - xTied - yTied + bothTied - 2 * discordant;
  const tau = conMinusDis / Math.sqrt(total - xTied) / Math.sqrt(total - yTied);
  return Math.min(1, Math.max(-1, tau));
}
