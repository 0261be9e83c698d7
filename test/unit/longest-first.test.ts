/** The order `run` plays its tasks in: unknown durations first, then longest first (see longestFirst). */
import { describe, expect, it } from 'vitest';
import { longestFirst } from '../../src/scheduler/longest-first.js';

describe('longestFirst', () => {
  it('puts jobs of unknown duration first in their order, then the known ones longest first, ties in their order', () => {
    const durations: Record<string, number | undefined> = { a: 5, b: undefined, c: 200, d: 5, e: undefined, f: 40 };
    expect(longestFirst(Object.keys(durations), (job) => durations[job])).toEqual(['b', 'e', 'c', 'f', 'a', 'd']);
  });

  it('leaves the order alone when nothing is known (a first run), and copies rather than sorts in place', () => {
    const jobs = [3, 1, 2];
    expect(longestFirst(jobs, () => undefined)).toEqual([3, 1, 2]);
    expect(longestFirst(jobs, (n) => n)).toEqual([3, 2, 1]);
    expect(jobs).toEqual([3, 1, 2]);
  });
});
