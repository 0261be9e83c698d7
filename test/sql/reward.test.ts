import { describe, expect, it } from 'vitest';
import { compareCodePoints, kendallTauB } from '../../envs/sql/kendall.js';
import { pyDate, pyDateTime, pyFloat, pyRowList, pyStr, pyTimeDelta, pyTuple } from '../../envs/sql/python-repr.js';
import { hasTopLevelOrderBy, sqlReward } from '../../envs/sql/reward.js';
import { pyRound } from '../../src/scoring/pyround.js';
import { isRepeatableRead, isSessionNeutral } from '../../envs/sql/statement-kind.js';

describe('kendallTauB (scipy.stats.kendalltau, variant b)', () => {
  it('matches hand-computed values', () => {
    expect(kendallTauB(['a', 'b', 'c'], ['a', 'b', 'c'])).toBe(1);
    expect(kendallTauB(['c', 'b', 'a'], ['a', 'b', 'c'])).toBe(-1);
    // ranks [2,1,3] vs [1,2,3]: 2 concordant, 1 discordant, no ties -> 1/3
    expect(kendallTauB(['b', 'a', 'c'], ['a', 'b', 'c'])).toBeCloseTo(1 / 3, 15);
    // ranks [1,2,1] vs [1,1,2]: one tie in each, one discordant pair -> (3-1-1+0-2)/sqrt(2)/sqrt(2) = -0.5
    expect(kendallTauB(['a', 'b', 'a'], ['a', 'a', 'b'])).toBeCloseTo(-0.5, 15);
    // ranks [1,1,2,3] vs [1,2,2,3]: tot 6, xtie 1, ytie 1, ntie 0, dis 0 -> 4/sqrt(5)/sqrt(5) = 0.8
    expect(kendallTauB(['a', 'a', 'b', 'c'], ['a', 'b', 'b', 'c'])).toBeCloseTo(0.8, 15);
  });

  it('counts pairs exactly as the pairwise definition does, ties included (random lists)', () => {
    // The O(n²) definition SciPy's result equals: concordant − discordant over all pairs, tie-corrected.
    const pairwise = (x: string[], y: string[]) => {
      let s = 0;
      let xt = 0;
      let yt = 0;
      let nt = 0;
      for (let i = 0; i < x.length; i++) {
        for (let j = i + 1; j < x.length; j++) {
          const dx = compareCodePoints(x[i]!, x[j]!);
          const dy = compareCodePoints(y[i]!, y[j]!);
          if (dx === 0) xt += 1;
          if (dy === 0) yt += 1;
          if (dx === 0 && dy === 0) nt += 1;
          s += Math.sign(dx) * Math.sign(dy);
        }
      }
      const tot = (x.length * (x.length - 1)) / 2;
      const dis = (tot - xt - yt + nt - s) / 2;
      return Math.min(1, Math.max(-1, (tot - xt - yt + nt - 2 * dis) / Math.sqrt(tot - xt) / Math.sqrt(tot - yt)));
    };
    let seed = 12345;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let trial = 0; trial < 300; trial++) {
      const n = 2 + Math.floor(random() * 60);
      const alphabet = 2 + Math.floor(random() * 12);
      const pick = () => String.fromCharCode(97 + Math.floor(random() * alphabet));
      const x = Array.from({ length: n }, pick);
      const y = Array.from({ length: n }, pick);
      const expected = new Set(x).size === 1 || new Set(y).size === 1 ? Number.NaN : pairwise(x, y);
      expect(kendallTauB(x, y), `${x.join('')} / ${y.join('')}`).toBe(expected);
    }
  });

  it('is NaN where SciPy is: one item, or a list of one repeated value', () => {
    expect(kendallTauB(['a'], ['a'])).toBeNaN();
    expect(kendallTauB(['a', 'a'], ['a', 'b'])).toBeNaN();
    expect(kendallTauB([], [])).toBeNaN();
  });

  it('orders strings by code point, as NumPy does (not by UTF-16 unit)', () => {
    expect(compareCodePoints('\u{1F600}', '\uFF21')).toBeGreaterThan(0);
    expect('\u{1F600}' < '\uFF21').toBe(true); // what plain JS comparison would get wrong
    expect(kendallTauB(['\uFF21', '\u{1F600}'], ['a', 'b'])).toBe(1);
  });
});

describe('sqlReward (InterCode)', () => {
  const rows = (...r: string[]) => r.map((x) => pyTuple([pyStr(x)]));
  it('is 1 for the same rows in the same order, 1 when both are empty', () => {
    expect(sqlReward(rows('a', 'b'), rows('a', 'b')).reward).toBe(1);
    expect(sqlReward([], []).reward).toBe(1);
  });
  it('scales the IoU by the order term even without ORDER BY (InterCode); the order-aware variant does not', () => {
    expect(sqlReward(rows('b', 'a'), rows('a', 'b')).reward).toBe(-1);
    expect(sqlReward(rows('b', 'a', 'c'), rows('a', 'b', 'c')).reward).toBe(0.33);
    expect(sqlReward(rows('b', 'a'), rows('a', 'b'), { order: 'gold-order-by', goldOrdered: false }).reward).toBe(1);
    expect(sqlReward(rows('b', 'a'), rows('a', 'b'), { order: 'gold-order-by', goldOrdered: true }).reward).toBe(-1);
    // none: the IoU alone, unrounded, whatever the order (InterCode's handicap and ReAct logs).
    expect(sqlReward(rows('b', 'a', 'c'), rows('a', 'b', 'd'), { order: 'none', goldOrdered: true })).toEqual({ reward: 0.5, iou: 0.5, kendallTau: null });
    expect(sqlReward(rows('c', 'b', 'a'), rows('a', 'b', 'c', 'd', 'e', 'f'), { order: 'none', goldOrdered: true }).reward).toBe(0.5);
    expect(sqlReward(rows('a', 'b'), rows('a', 'b', 'c'), { order: 'none', goldOrdered: true }).reward).toBeCloseTo(2 / 3, 15);
  });
  it('scores a result against an identical one exactly as the general path would (ties, one row, empty, every order mode)', () => {
    const general = (result: string[], options: Parameters<typeof sqlReward>[2]) => sqlReward([...result, 'only-in-agent'], [...result, 'only-in-gold'], options);
    for (const result of [rows('a', 'b', 'c'), rows('a', 'a', 'b'), rows('a', 'a'), rows('a'), rows('b', 'a', 'b', 'c', 'a')]) {
      for (const options of [undefined, { order: 'none', goldOrdered: true }, { order: 'gold-order-by', goldOrdered: false }] as const) {
        const same = sqlReward(result, [...result], options);
        const other = general(result, options);
        expect(same.iou).toBe(1);
        // The general path over the same rows plus one unshared row each: same order term.
        expect(same.kendallTau).toBe(other.kendallTau);
        expect(same.reward).toBe(same.kendallTau === null ? 1 : pyRound(same.kendallTau, 2));
      }
    }
    expect(sqlReward([], [])).toEqual({ reward: 1, iou: 1, kendallTau: null });
  });
  it('is the multiset IoU, rounded only when the order term is defined', () => {
    expect(sqlReward(rows('a', 'b', 'c'), rows('a', 'b', 'd')).reward).toBe(0.5);
    // one shared row: tau is NaN, the IoU stays unrounded
    expect(sqlReward(rows('a'), rows('a', 'b', 'c')).reward).toBe(1 / 3);
    // duplicates count: {a:2} vs {a:1} -> 1/2
    expect(sqlReward(rows('a', 'a'), rows('a')).reward).toBe(0.5);
    expect(sqlReward(rows('x'), rows('a')).reward).toBe(0);
  });
  it('scores 0 when the agent has no result set', () => {
    expect(sqlReward(null, rows('a')).reward).toBe(0);
    expect(sqlReward(null, []).reward).toBe(0);
  });
  it('tells a top-level ORDER BY from one in a subquery or a string', () => {
    expect(hasTopLevelOrderBy('SELECT a FROM t ORDER BY a')).toBe(true);
    expect(hasTopLevelOrderBy('SELECT a FROM (SELECT a FROM t ORDER BY a LIMIT 3) x')).toBe(false);
    expect(hasTopLevelOrderBy("SELECT 'order by' FROM t")).toBe(false);
  });
});

describe('Python reprs (mysql.connector / sqlite3 values as InterCode printed them)', () => {
  it('floats', () => {
    const cases: [number, string][] = [
      [1, '1.0'], [0.1, '0.1'], [-2.5, '-2.5'], [1e16, '1e+16'], [1e15, '1000000000000000.0'], [0.0001, '0.0001'],
      [0.00001, '1e-05'], [1.5e-7, '1.5e-07'], [12345678901234567890, '1.2345678901234567e+19'], [276.46666666666664, '276.46666666666664'],
      [-0, '-0.0'], [Infinity, 'inf'],
    ];
    for (const [x, repr] of cases) expect(pyFloat(x)).toBe(repr);
  });
  it('strings pick their quotes and escape as Python does', () => {
    expect(pyStr('abc')).toBe("'abc'");
    expect(pyStr("it's")).toBe(`"it's"`);
    expect(pyStr('say "hi"')).toBe(`'say "hi"'`);
    expect(pyStr(`it's "x"`)).toBe(`'it\\'s "x"'`);
    expect(pyStr('a\nb\\')).toBe("'a\\nb\\\\'");
    expect(pyStr('é\u0000\u200b')).toBe("'é\\x00\\u200b'");
  });
  it('dates, times and tuples', () => {
    expect(pyDate('2020-01-05')).toBe('datetime.date(2020, 1, 5)');
    expect(pyDate('0000-00-00')).toBe('None');
    expect(pyDateTime('1999-01-06 20:06:46')).toBe('datetime.datetime(1999, 1, 6, 20, 6, 46)');
    expect(pyDateTime('1999-01-06 20:06:00')).toBe('datetime.datetime(1999, 1, 6, 20, 6)');
    expect(pyTimeDelta('01:00:00')).toBe('datetime.timedelta(seconds=3600)');
    expect(pyTimeDelta('-00:00:01')).toBe('datetime.timedelta(days=-1, seconds=86399)');
    expect(pyTimeDelta('00:00:00')).toBe('datetime.timedelta(0)');
    expect(pyRowList([["'a'"], ['1', 'None']])).toBe("[('a',), (1, None)]");
  });
});

describe('statement kinds', () => {
  it('reads that cannot change the session', () => {
    expect(isSessionNeutral('SELECT * FROM t')).toBe(true);
    expect(isSessionNeutral('  -- note\n/* c */ show tables')).toBe(true);
    expect(isSessionNeutral('DESC t')).toBe(true);
    expect(isSessionNeutral('(SELECT 1) UNION (SELECT 2)')).toBe(true);
  });
  it('anything else counts as changing it', () => {
    for (const sql of ['USE x', 'SET @a = 1', 'SELECT @a := 1', 'SELECT 1 INTO @x', 'DELETE FROM t', '/*!50000 SET sql_mode=""*/', 'SELECT LAST_INSERT_ID(5)', 'PRAGMA query_only = OFF',
      // User locks and sequences (GET_LOCK was missed: `_` is a word character, so `\block\b` did not match it).
      "SELECT GET_LOCK('x', 0)", "SELECT release_all_locks()", 'SELECT NEXT VALUE FOR s', 'SELECT PREVIOUS VALUE FOR s', 'SELECT lastval(s)',
      'SELECT * FROM t LOCK IN SHARE MODE', 'SELECT * FROM t FOR UPDATE']) {
      expect(isSessionNeutral(sql), sql).toBe(false);
    }
  });
  it('repeatable reads leave out non-deterministic functions', () => {
    expect(isRepeatableRead('SELECT name FROM t ORDER BY name')).toBe(true);
    expect(isRepeatableRead('SELECT RAND()')).toBe(false);
    expect(isRepeatableRead('SELECT now()')).toBe(false);
  });
});
