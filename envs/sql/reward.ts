import { pyRound } from '../../src/scoring/pyround.js';
import { kendallTauB } from './kendall.js';

/**
 * One side's result as InterCode's reward saw it: the rows of a result set, each in its
 * string form (`str(row)`), or null when there were none to compare (the last action
 * failed, returned no result set, or nothing ran yet).
 */
export type ScoredRows = readonly string[] | null;

export interface SqlRewardOptions {
  /**
   * `intercode` (default): the order term applies whenever rows are shared, as InterCode
   * scored (so a right answer in another order loses reward even without ORDER BY).
   * `gold-order-by`: the order term applies only when the gold query has ORDER BY.
   * `none`: no order term, the multiset IoU alone. InterCode's handicap and ReAct SQL logs
   * were scored so (their rewards are never negative and keep unrounded IoU values where
   * the order term was defined), so replaying them needs it.
   */
  order: 'intercode' | 'gold-order-by' | 'none';
  /** Whether the gold query sorts its result (needed by `gold-order-by`). */
  goldOrdered: boolean;
}

export interface SqlRewardResult {
  reward: number;
  /** Multiset intersection over union (1 when both are empty). */
  iou: number;
  /** Kendall's tau-b over the shared rows' orders; null when not computed or NaN. */
  kendallTau: number | null;
}

function counts(rows: readonly string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of rows) out.set(r, (out.get(r) ?? 0) + 1);
  return out;
}

/** The items of `rows` that are in `shared`, in `rows` order, each used as often as `shared` allows. */
function sharedInOrder(rows: readonly string[], shared: ReadonlyMap<string, number>): string[] {
  const left = new Map(shared);
  const out: string[] = [];
  for (const r of rows) {
    const n = left.get(r);
    if (!n) continue;
    left.set(r, n - 1);
    out.push(r);
  }
  return out;
}

/**
 * InterCode's SQL reward: multiset IoU of the two results' rows; 1 when both are empty;
 * when rows are shared, multiplied by Kendall's tau between the shared rows' orders and
 * rounded to 2 places (a NaN tau, e.g. one shared row, leaves the IoU unrounded, as the
 * original did). Either side null scores 0.
 */
export function sqlReward(agent: ScoredRows, gold: ScoredRows, options: SqlRewardOptions = { order: 'intercode', goldOrdered: true }): SqlRewardResult {
  if (agent === null || gold === null) return { reward: 0, iou: 0, kendallTau: null };
  const ordered = options.order === 'intercode' || (options.order === 'gold-order-by' && options.goldOrdered);
  if (sameRows(agent, gold)) return ordered ? sameRowsReward(counts(agent)) : { reward: 1, iou: 1, kendallTau: null };
  const a = counts(agent);
  const g = counts(gold);
  const union = new Map(a);
  for (const [k, n] of g) union.set(k, Math.max(n, union.get(k) ?? 0));
  if (union.size === 0) return { reward: 1, iou: 1, kendallTau: null };
  const intersection = new Map<string, number>();
  for (const [k, n] of a) {
    const m = g.get(k);
    if (m) intersection.set(k, Math.min(n, m));
  }
  let totalIntersect = 0;
  for (const n of intersection.values()) totalIntersect += n;
  let totalUnion = 0;
  for (const n of union.values()) totalUnion += n;
  const iou = totalIntersect / totalUnion;
  if (intersection.size === 0 || !ordered) {
    return { reward: iou, iou, kendallTau: null };
  }
  const tau = kendallTauB(sharedInOrder(agent, intersection), sharedInOrder(gold, intersection));
  if (Number.isNaN(tau)) return { reward: iou, iou, kendallTau: null };
  return { reward: pyRound(tau * iou, 2), iou, kendallTau: tau };
}

function sameRows(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The reward of a result against itself, without ranking: IoU 1, and tau-b from its ties
 * alone (no discordant pairs, every tie shared), computed as {@link kendallTauB} would.
 */
function sameRowsReward(rowCounts: ReadonlyMap<string, number>): SqlRewardResult {
  let n = 0;
  let tied = 0;
  for (const c of rowCounts.values()) {
    n += c;
    tied += (c * (c - 1)) / 2;
  }
  const total = (n * (n - 1)) / 2;
  if (tied === total) return { reward: 1, iou: 1, kendallTau: null };
  const tau = Math.min(1, Math.max(-1, (total - tied) / Math.sqrt(total - tied) / Math.sqrt(total - tied)));
  return { reward: pyRound(tau, 2), iou: 1, kendallTau: tau };
}

/** Whether a query's outermost statement sorts its result (an ORDER BY outside any parentheses). */
export function hasTopLevelOrderBy(sql: string): boolean {
  let depth = 0;
  const text = sql.replace(/'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.)*"|`[^`]*`/g, "''");
  const re = /[()]|\border\s+by\b/gi;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    if (m[0] === '(') depth += 1;
    else if (m[0] === ')') depth -= 1;
    else if (depth === 0) return true;
  }
  return false;
}
