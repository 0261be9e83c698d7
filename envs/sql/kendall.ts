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

/** Σ t(t−1)/2 over groups of equal values. */
function tiedPairs(ranks: readonly number[]): number {
  const counts = new Map<number, number>();
  for (const r of ranks) counts.set(r, (counts.get(r) ?? 0) + 1);
  let total = 0;
  for (const t of counts.values()) total += (t * (t - 1)) / 2;
  return total;
}

export function kendallTauB(x: readonly string[], y: readonly string[]): number {
  if (x.length !== y.length) throw new RangeError(`kendallTauB: lists differ in length (${x.length} vs ${y.length})`);
  const n = x.length;
  if (n === 0) return Number.NaN;
  const rx = denseRanks(x);
  const ry = denseRanks(y);
  let discordant = 0;
  const joint = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const key = `${rx[i]},${ry[i]}`;
    joint.set(key, (joint.get(key) ?? 0) + 1);
    for (let j = i + 1; j < n; j++) {
      if ((rx[i]! - rx[j]!) * (ry[i]! - ry[j]!) < 0) discordant += 1;
    }
  }
  let bothTied = 0;
  for (const t of joint.values()) bothTied += (t * (t - 1)) / 2;
  const xTied = tiedPairs(rx);
  const yTied = tiedPairs(ry);
  const total = (n * (n - 1)) / 2;
  if (xTied === total || yTied === total) return Number.NaN;
  // SciPy: con − dis = tot − xtie − ytie + ntie − 2·dis, divided by √(tot−xtie)·√(tot−ytie) in that order.
  const conMinusDis = total - xTied - yTied + bothTied - 2 * discordant;
  const tau = conMinusDis / Math.sqrt(total - xTied) / Math.sqrt(total - yTied);
  return Math.min(1, Math.max(-1, tau));
}
