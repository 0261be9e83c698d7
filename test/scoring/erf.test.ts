import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { erf } from '../../src/scoring/index.js';

const url = new URL('../fixtures/scoring/erf.json', import.meta.url);
const fixtures = (JSON.parse(readFileSync(url, 'utf8')) as { cases: { x: number; y: number }[] }).cases;

/** Distance in units in the last place between two finite doubles of the same sign. */
function ulps(a: number, b: number): number {
  const view = new DataView(new ArrayBuffer(16));
  view.setFloat64(0, a);
  view.setFloat64(8, b);
  const d = view.getBigInt64(0) - view.getBigInt64(8);
  return Number(d < 0n ? -d : d);
}

describe('erf against Python math.erf fixtures', () => {
  it('covers the integers 0..6, their negatives and every branch boundary', () => {
    const xs = new Set(fixtures.map((c) => c.x));
    for (let i = -6; i <= 6; i++) expect(xs.has(i)).toBe(true);
    for (const edge of [0.84375, 1.25, 6]) expect(xs.has(edge) && xs.has(-edge)).toBe(true);
    expect(fixtures.length).toBeGreaterThan(5000);
  });

  it('is within 1e-15 and one ulp of math.erf everywhere, and mostly bit-identical', () => {
    let maxAbs = 0;
    let maxUlps = 0;
    let exact = 0;
    for (const { x, y } of fixtures) {
      const got = erf(x);
      maxAbs = Math.max(maxAbs, Math.abs(got - y));
      maxUlps = Math.max(maxUlps, ulps(got, y));
      if (Object.is(got, y)) exact++;
    }
    expect(maxAbs).toBeLessThanOrEqual(1e-15);
    expect(maxUlps).toBeLessThanOrEqual(1);
    expect(exact / fixtures.length).toBeGreaterThan(0.99);
  });
});

describe('erf (hand-written)', () => {
  it('is odd, keeps the sign of zero and saturates', () => {
    expect(erf(0)).toBe(0);
    expect(Object.is(erf(-0), -0)).toBe(true);
    expect(erf(-0.5)).toBe(-erf(0.5));
    expect(erf(6)).toBe(1);
    expect(erf(-30)).toBe(-1);
    expect(erf(Infinity)).toBe(1);
    expect(erf(-Infinity)).toBe(-1);
    expect(erf(NaN)).toBeNaN();
  });

  it('matches known values', () => {
    expect(erf(1)).toBe(0.8427007929497149); // math.erf(1)
    expect(erf(0.5)).toBe(0.5204998778130465); // math.erf(0.5)
    expect(erf(2)).toBe(0.9953222650189527); // math.erf(2)
    expect(erf(1e-10)).toBe(1.1283791670955126e-10); // 2/sqrt(pi) * x
  });
});
