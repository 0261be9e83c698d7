import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { pyRound } from '../../src/scoring/index.js';

interface RoundCase {
  x: number;
  n: number;
  y?: number;
  error?: string;
}

const url = new URL('../fixtures/scoring/pyround.json', import.meta.url);
const fixtures = (JSON.parse(readFileSync(url, 'utf8')) as { cases: RoundCase[] }).cases;

describe('pyRound against Python round() fixtures', () => {
  it('agrees bit for bit (sign of zero included) on every case', () => {
    const mismatches: string[] = [];
    for (const { x, n, y } of fixtures) {
      if (y === undefined) continue;
      const got = pyRound(x, n);
      if (!Object.is(got, y)) mismatches.push(`round(${x}, ${n}): got ${got}, Python ${y}`);
    }
    expect(fixtures.length).toBeGreaterThan(10_000);
    expect(mismatches).toEqual([]);
  });

  it('throws RangeError where Python raises OverflowError', () => {
    const overflows = fixtures.filter((c) => c.error !== undefined);
    expect(overflows.length).toBeGreaterThan(0);
    for (const { x, n, error } of overflows) {
      expect(error).toBe('OverflowError: rounded value too large to represent');
      expect(() => pyRound(x, n)).toThrow(new RangeError('rounded value too large to represent'));
    }
  });
});

describe('pyRound semantics (hand-written)', () => {
  it('rounds the exact binary value, not the decimal literal', () => {
    expect(pyRound(2.675, 2)).toBe(2.67); // 2.675 is 2.67499999999999982236431605997495353221893310546875
    expect(pyRound(1.005, 2)).toBe(1); // 1.00499999999999989341858963598497211933135986328125
    expect(pyRound(0.285, 2)).toBe(0.28);
  });

  it('sends exact binary ties to the even digit', () => {
    expect(pyRound(0.125, 2)).toBe(0.12);
    expect(pyRound(0.375, 2)).toBe(0.38);
    expect(pyRound(2.5, 0)).toBe(2);
    expect(pyRound(-2.5, 0)).toBe(-2);
    expect(pyRound(3.5, 0)).toBe(4);
  });

  it('rounds InterCode-style reward sums', () => {
    expect(pyRound(0.01 + 0.33 + 0.33 + 0.17, 2)).toBe(0.84);
    expect(pyRound(0.33 * 0.5, 2)).toBe(0.17); // 0.165 is stored just above the tie
    expect(pyRound(0.33 * 0.15, 2)).toBe(0.05);
  });

  it('handles negative ndigits, signed zero and non-finite values like Python', () => {
    expect(pyRound(1234.5, -2)).toBe(1200);
    expect(pyRound(1250, -2)).toBe(1200);
    expect(Object.is(pyRound(-0.001, 2), -0)).toBe(true);
    expect(Object.is(pyRound(5, -400), 0)).toBe(true);
    expect(pyRound(0.1, 400)).toBe(0.1);
    expect(pyRound(Infinity, 2)).toBe(Infinity);
    expect(pyRound(NaN, 2)).toBeNaN();
  });

  it('rejects a non-integer ndigits', () => {
    expect(() => pyRound(1, 1.5)).toThrow(TypeError);
  });
});
