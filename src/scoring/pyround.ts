/**
 * Python 3's `round(x, ndigits)` for floats.
 *
 * CPython rounds the *exact* binary value of `x` to `ndigits` decimal places (dtoa mode
 * 3, ties to even) and converts that decimal back to the nearest double. So
 * `round(2.675, 2) == 2.67` (2.675 is stored as 2.67499999…), while an exact binary tie
 * goes to the even digit: `round(0.125, 2) == 0.12`, `round(0.375, 2) == 0.38`.
 * `Math.round(x * 100) / 100` and `toFixed` get several of these wrong.
 */

/** Past this many digits every double is already exact: CPython returns `x`. */
const NDIGITS_MAX = 323;
/** Below this, every finite double rounds to zero: CPython returns `0.0 * x`. */
const NDIGITS_MIN = -308;

const bits = new DataView(new ArrayBuffer(8));

/** `|x| = significand * 2^exponent` with both exact integers (x finite, non-zero). */
function decompose(x: number): { significand: bigint; exponent: number } {
  bits.setFloat64(0, Math.abs(x));
  const hi = bits.getUint32(0);
  const lo = bits.getUint32(4);
  const biased = hi >>> 20;
  const fraction = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  return biased === 0
    ? { significand: fraction, exponent: -1074 } // subnormal
    : { significand: fraction | (1n << 52n), exponent: biased - 1075 };
}

/**
 * `round(x, ndigits)` exactly as Python 3 computes it for a float `x`: the double
 * nearest to the exact value of `x` rounded to `ndigits` decimal places (negative
 * `ndigits` round to tens, hundreds, …), exact ties to even, sign kept (so
 * `pyRound(-0.001, 2)` is `-0`). NaN and ±Infinity are returned unchanged.
 *
 * @throws {TypeError} if `ndigits` is not an integer (Python: TypeError).
 * @throws {RangeError} "rounded value too large to represent" when the rounded value
 *   overflows a double (Python: OverflowError), e.g. `pyRound(1.7976931348623157e308, -308)`.
 */
export function pyRound(x: number, ndigits: number): number {
  if (!Number.isInteger(ndigits)) throw new TypeError(`ndigits must be an integer, got ${ndigits}`);
  if (!Number.isFinite(x) || x === 0 || ndigits > NDIGITS_MAX) return x;
  if (ndigits < NDIGITS_MIN) return 0 * x;

  const { significand, exponent } = decompose(x);
  // |x| * 10^ndigits = numerator / denominator, exactly
  let numerator = exponent >= 0 ? significand << BigInt(exponent) : significand;
  let denominator = exponent >= 0 ? 1n : 1n << BigInt(-exponent);
  if (ndigits >= 0) numerator *= 10n ** BigInt(ndigits);
  else denominator *= 10n ** BigInt(-ndigits);

  let quotient = numerator / denominator;
  const twiceRemainder = (numerator % denominator) * 2n;
  if (twiceRemainder > denominator || (twiceRemainder === denominator && (quotient & 1n) === 1n)) {
    quotient += 1n;
  }
  // ECMAScript's string-to-number conversion is correctly rounded, like CPython's strtod.
  const rounded = Number(`${quotient}e${-ndigits}`);
  if (!Number.isFinite(rounded)) throw new RangeError('rounded value too large to represent');
  return x < 0 ? -rounded : rounded;
}
