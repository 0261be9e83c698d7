/**
 * Order statistics for benchmark samples. Percentiles interpolate linearly between the
 * two nearest ranks (numpy's default `linear` method, Hyndman–Fan type 7), so p50 of an
 * even-sized sample is the mean of the middle two and p0/p100 are the min/max.
 */

/** Count, extremes, mean and the percentiles a latency table shows, all in input units. */
export interface SampleSummary {
  count: number;
  min: number;
  mean: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

function checkSamples(samples: ArrayLike<number>): void {
  if (samples.length === 0) throw new RangeError('samples must not be empty');
  for (let i = 0; i < samples.length; i++) {
    if (!Number.isFinite(samples[i])) throw new RangeError(`samples[${i}] must be a finite number`);
  }
}

/** A sorted copy (ascending, numeric) of `samples`. */
export function sortedCopy(samples: ArrayLike<number>): Float64Array {
  return Float64Array.from(samples).sort();
}

/**
 * The `p`-th percentile of samples already sorted ascending.
 * @throws RangeError when `sorted` is empty or `p` is outside [0, 100].
 */
export function percentileOfSorted(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) throw new RangeError('samples must not be empty');
  if (!(p >= 0 && p <= 100)) throw new RangeError('p must be a number from 0 to 100');
  const rank = (p / 100) * (sorted.length - 1);
  const lower = Math.floor(rank);
  const upper = Math.ceil(rank);
  const low = sorted[lower]!;
  return lower === upper ? low : low + (sorted[upper]! - low) * (rank - lower);
}

/**
 * The `p`-th percentile (0–100) of `samples`, in any order.
 * @throws RangeError when `samples` is empty, holds a non-finite number, or `p` is outside [0, 100].
 */
export function percentile(samples: ArrayLike<number>, p: number): number {
  checkSamples(samples);
  return percentileOfSorted(sortedCopy(samples), p);
}

/**
 * Summary statistics of `samples`.
 * @throws RangeError when `samples` is empty or holds a non-finite number.
 */
export function summarize(samples: ArrayLike<number>): SampleSummary {
  checkSamples(samples);
  const sorted = sortedCopy(samples);
  let sum = 0;
  for (const value of sorted) sum += value;
  return {
    count: sorted.length,
    min: sorted[0]!,
    mean: sum / sorted.length,
    p50: percentileOfSorted(sorted, 50),
    p95: percentileOfSorted(sorted, 95),
    p99: percentileOfSorted(sorted, 99),
    max: sorted[sorted.length - 1]!,
  };
}
