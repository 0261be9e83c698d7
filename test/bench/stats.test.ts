import { describe, expect, it } from 'vitest';
import { percentile, percentileOfSorted, summarize } from '../../bench/stats.js';

describe('percentile', () => {
  it('interpolates linearly between the nearest ranks (numpy "linear")', () => {
    const samples = [1, 2, 3, 4];
    expect(percentile(samples, 50)).toBe(2.5);
    expect(percentile(samples, 25)).toBeCloseTo(1.75, 12);
    expect(percentile(samples, 95)).toBeCloseTo(3.85, 12);
  });

  it('gives the minimum at 0 and the maximum at 100', () => {
    expect(percentile([5, 1, 9], 0)).toBe(1);
    expect(percentile([5, 1, 9], 100)).toBe(9);
  });

  it('sorts numerically, not as strings, and leaves the input alone', () => {
    const samples = [10, 9, 100, 1, 2];
    expect(percentile(samples, 50)).toBe(9);
    expect(samples).toEqual([10, 9, 100, 1, 2]);
  });

  it('returns the only value of a one-element sample for every p', () => {
    for (const p of [0, 37.5, 50, 95, 100]) expect(percentile([42], p)).toBe(42);
  });

  it('hits exact ranks: p50 and p95 of 1..101', () => {
    const samples = Array.from({ length: 101 }, (_, i) => 101 - i);
    expect(percentile(samples, 50)).toBe(51);
    expect(percentile(samples, 95)).toBe(96);
  });

  it('rejects empty samples, non-finite values and p outside [0, 100]', () => {
    expect(() => percentile([], 50)).toThrow(RangeError);
    expect(() => percentile([1, Number.NaN], 50)).toThrow('samples[1] must be a finite number');
    expect(() => percentile([1], -1)).toThrow('p must be a number from 0 to 100');
    expect(() => percentile([1], 101)).toThrow(RangeError);
    expect(() => percentileOfSorted([1], Number.NaN)).toThrow(RangeError);
  });
});

describe('summarize', () => {
  it('reports count, extremes, mean and percentiles', () => {
    const summary = summarize([4, 3, 2, 1]);
    expect(summary).toMatchObject({ count: 4, min: 1, max: 4, mean: 2.5, p50: 2.5 });
    expect(summary.p95).toBeCloseTo(3.85, 12);
    expect(summary.p99).toBeCloseTo(3.97, 12);
  });
});
