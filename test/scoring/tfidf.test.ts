import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EmptyVocabularyError, answerSimilarity, tfidfCosine, tfidfTokens } from '../../src/scoring/index.js';

function cases<T>(name: string): T[] {
  const url = new URL(`../fixtures/scoring/${name}`, import.meta.url);
  return (JSON.parse(readFileSync(url, 'utf8')) as { cases: T[] }).cases;
}

interface TfidfCase {
  a: string;
  b: string;
  similarity?: number;
  vocabulary?: string[];
  error?: string;
}

interface UnicodeTables {
  word: [number, number][];
  unassigned: [number, number][];
  lower: [number, string][];
}

/** Python sorts str by code point; JS's default sort compares UTF-16 units. */
const byCodePoint = (s: string, t: string): number => {
  const a = [...s].map((c) => c.codePointAt(0)!);
  const b = [...t].map((c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
};

function inRanges(ranges: [number, number][], cp: number): boolean {
  let lo = 0;
  let hi = ranges.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const [start, end] = ranges[mid]!;
    if (cp < start) hi = mid - 1;
    else if (cp > end) lo = mid + 1;
    else return true;
  }
  return false;
}

describe('tfidfCosine against scikit-learn fixtures', () => {
  const fixtures = cases<TfidfCase>('tfidf.json');

  it('has hundreds of cases, some of them errors', () => {
    expect(fixtures.length).toBeGreaterThan(250);
    expect(fixtures.filter((c) => c.error !== undefined).length).toBeGreaterThan(5);
  });

  it('reproduces every similarity bit for bit', () => {
    const mismatches: string[] = [];
    let maxDiff = 0;
    for (const [i, c] of fixtures.entries()) {
      if (c.similarity === undefined) continue;
      const got = tfidfCosine(c.a, c.b);
      maxDiff = Math.max(maxDiff, Math.abs(got - c.similarity));
      if (!Object.is(got, c.similarity)) mismatches.push(`#${i}: got ${got}, sklearn ${c.similarity}`);
    }
    expect(maxDiff).toBeLessThanOrEqual(1e-12);
    expect(mismatches).toEqual([]);
  });

  it('builds the same vocabulary as sklearn', () => {
    for (const c of fixtures) {
      if (c.vocabulary === undefined) continue;
      const vocab = [...new Set([...tfidfTokens(c.a), ...tfidfTokens(c.b)])].sort(byCodePoint);
      expect(vocab, JSON.stringify([c.a, c.b])).toEqual(c.vocabulary);
    }
  });

  it('throws EmptyVocabularyError exactly where sklearn raises', () => {
    for (const c of fixtures) {
      if (c.error === undefined) continue;
      expect(() => tfidfCosine(c.a, c.b)).toThrow(EmptyVocabularyError);
      expect(() => tfidfCosine(c.a, c.b)).toThrow(c.error);
    }
  });
});

describe('answerSimilarity against InterCode fixtures', () => {
  it('matches the try/except rule, None inputs included', () => {
    for (const c of cases<{ agent: string | null; gold: string | null; similarity: number }>('answer.json')) {
      expect(answerSimilarity(c.agent, c.gold), JSON.stringify(c)).toBe(c.similarity);
    }
  });
});

describe('Python text semantics', () => {
  const [tables] = cases<UnicodeTables>('unicode.json');

  // Tokens are matched after lowercasing, so only characters lower() leaves alone matter.
  it('treats as word characters exactly what Python re \\w matches (Unicode assigned in both)', () => {
    const changedByLower = new Set(tables!.lower.map(([cp]) => cp));
    const disagree: string[] = [];
    for (let cp = 0; cp <= 0x10ffff; cp++) {
      if ((cp >= 0xd800 && cp <= 0xdfff) || inRanges(tables!.unassigned, cp)) continue;
      if (changedByLower.has(cp)) continue;
      const python = inRanges(tables!.word, cp);
      const ours = tfidfTokens(String.fromCodePoint(cp).repeat(2)).length === 1;
      if (python !== ours) disagree.push(cp.toString(16));
    }
    expect(disagree).toEqual([]);
  });

  it('lowercases like str.lower()', () => {
    const lower = new Map(tables!.lower);
    const disagree: string[] = [];
    for (let cp = 0; cp <= 0x10ffff; cp++) {
      if ((cp >= 0xd800 && cp <= 0xdfff) || inRanges(tables!.unassigned, cp)) continue;
      const c = String.fromCodePoint(cp);
      if (c.toLowerCase() !== (lower.get(cp) ?? c)) disagree.push(cp.toString(16));
    }
    expect(disagree).toEqual([]);
  });
});

describe('tfidfCosine semantics (hand-written)', () => {
  const idfRare = 1 + Math.log(1.5); // a term in one of the two texts

  it('scores one shared and one private term each as 1 / (1 + idf^2)', () => {
    expect(tfidfCosine('hello world', 'hello there')).toBeCloseTo(1 / (1 + idfRare ** 2), 15);
  });

  it('is case-insensitive and ignores order and punctuation', () => {
    expect(tfidfCosine('Hello, World!', 'world hello')).toBeCloseTo(1, 15);
  });

  it('scores identical texts 1 up to one ulp, as sklearn does', () => {
    expect(tfidfCosine('alpha beta gamma', 'alpha beta gamma')).toBeCloseTo(1, 15);
  });

  it('scores disjoint texts and a token-less text 0', () => {
    expect(tfidfCosine('foo bar', 'baz qux')).toBe(0);
    expect(tfidfCosine('foo bar', '! ? x')).toBe(0);
  });

  it('ignores one-character tokens; only they make an empty vocabulary', () => {
    expect(tfidfTokens('a bb c_ 1 22 é')).toEqual(['bb', 'c_', '22']);
    expect(() => tfidfCosine('a b c', '1 2 3')).toThrow(EmptyVocabularyError);
    expect(() => tfidfCosine('', '')).toThrow('empty vocabulary; perhaps the documents only contain stop words');
  });

  it('splits at combining marks, which Python does not count as \\w', () => {
    expect(tfidfTokens('e\u0301te')).toEqual(['te']);
  });

  it('answerSimilarity falls back to equality where sklearn raises', () => {
    expect(answerSimilarity(null, null)).toBe(1);
    expect(answerSimilarity('', null)).toBe(0);
    expect(answerSimilarity('', '')).toBe(1);
    expect(answerSimilarity('!', '?')).toBe(0);
    expect(answerSimilarity('x', 'x')).toBe(1);
    expect(answerSimilarity('foo bar', 'baz qux')).toBe(0);
  });
});
