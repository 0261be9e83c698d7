/**
 * The error function, as Python's `math.erf` computes it on Linux.
 *
 * CPython calls the C library's `erf`; glibc up to 2.39 uses Sun's fdlibm algorithm
 * (rational approximations on [0, 0.84375), [0.84375, 1.25), [1.25, 1/0.35),
 * [1/0.35, 6) and 1 beyond) with polynomials regrouped for pipelining. This follows
 * glibc's grouping term by term, so results agree to the last bit except where
 * `Math.exp` and glibc's `exp` round differently (at most one ulp apart).
 */

const words = new DataView(new ArrayBuffer(8));

/** The double whose IEEE-754 bits are `hi:lo` (the form fdlibm documents constants in). */
function fromWords(hi: number, lo: number): number {
  words.setUint32(0, hi);
  words.setUint32(4, lo);
  return words.getFloat64(0);
}

function highWord(x: number): number {
  words.setFloat64(0, x);
  return words.getUint32(0);
}

/** `x` with the low 32 bits of its significand cleared (fdlibm's SET_LOW_WORD(z, 0)). */
function clearLowWord(x: number): number {
  words.setFloat64(0, x);
  words.setUint32(4, 0);
  return words.getFloat64(0);
}

const erx = fromWords(0x3feb0ac1, 0x60000000);
const efx = fromWords(0x3fc06eba, 0x8214db69);
// erf(x) = x + x*P(x^2)/Q(x^2) on [0, 0.84375)
const pp = [
  fromWords(0x3fc06eba, 0x8214db68), fromWords(0xbfd4cd7d, 0x691cb913),
  fromWords(0xbf9d2a51, 0xdbd7194f), fromWords(0xbf77a291, 0x236668e4),
  fromWords(0xbef8ead6, 0x120016ac),
] as const;
const qq = [
  0, fromWords(0x3fd97779, 0xcddadc09), fromWords(0x3fb0a54c, 0x5536ceba),
  fromWords(0x3f74d022, 0xc4d36b0f), fromWords(0x3f215dc9, 0x221c1a10),
  fromWords(0xbed09c43, 0x42a26120),
] as const;
// erf(1+s) = erx + P(s)/Q(s) on [0.84375, 1.25)
const pa = [
  fromWords(0xbf6359b8, 0xbef77538), fromWords(0x3fda8d00, 0xad92b34d),
  fromWords(0xbfd7d240, 0xfbb8c3f1), fromWords(0x3fd45fca, 0x805120e4),
  fromWords(0xbfbc6398, 0x3d3e28ec), fromWords(0x3fa22a36, 0x599795eb),
  fromWords(0xbf61bf38, 0x0a96073f),
] as const;
const qa = [
  0, fromWords(0x3fbb3e66, 0x18eee323), fromWords(0x3fe14af0, 0x92eb6f33),
  fromWords(0x3fb2635c, 0xd99fe9a7), fromWords(0x3fc02660, 0xe763351f),
  fromWords(0x3f8bedc2, 0x6b51dd1c), fromWords(0x3f888b54, 0x5735151d),
] as const;
// erfc(x) = exp(-x*x - 0.5625 + R(1/x^2)/S(1/x^2)) / x on [1.25, 1/0.35)
const ra = [
  fromWords(0xbf843412, 0x600d6435), fromWords(0xbfe63416, 0xe4ba7360),
  fromWords(0xc0251e04, 0x41b0e726), fromWords(0xc04f300a, 0xe4cba38d),
  fromWords(0xc0644cb1, 0x84282266), fromWords(0xc067135c, 0xebccabb2),
  fromWords(0xc0545265, 0x57e4d2f2), fromWords(0xc023a0ef, 0xc69ac25c),
] as const;
const sa = [
  0, fromWords(0x4033a6b9, 0xbd707687), fromWords(0x4061350c, 0x526ae721),
  fromWords(0x407b290d, 0xd58a1a71), fromWords(0x40842b19, 0x21ec2868),
  fromWords(0x407ad021, 0x57700314), fromWords(0x405b28a3, 0xee48ae2c),
  fromWords(0x401a47ef, 0x8e484a93), fromWords(0xbfaeeff2, 0xee749a62),
] as const;
// the same form on [1/0.35, 6)
const rb = [
  fromWords(0xbf843412, 0x39e86f4a), fromWords(0xbfe993ba, 0x70c285de),
  fromWords(0xc031c209, 0x555f995a), fromWords(0xc064145d, 0x43c5ed98),
  fromWords(0xc083ec88, 0x1375f228), fromWords(0xc0900461, 0x6a2e5992),
  fromWords(0xc07e384e, 0x9bdc383f),
] as const;
const sb = [
  0, fromWords(0x403e568b, 0x261d5190), fromWords(0x40745cae, 0x221b9f0a),
  fromWords(0x409802eb, 0x189d5118), fromWords(0x40a8ffb7, 0x688c246a),
  fromWords(0x40a3f219, 0xcedf3be6), fromWords(0x407da874, 0xe79fe763),
  fromWords(0xc03670e2, 0x42712d62),
] as const;

/**
 * The error function `erf(x) = 2/sqrt(pi) * integral from 0 to x of exp(-t^2) dt`,
 * matching Python's `math.erf` (glibc) to within one ulp; erf(±0) = ±0, erf(±Infinity)
 * = ±1, erf(NaN) = NaN. Never throws.
 */
export function erf(x: number): number {
  if (Number.isNaN(x)) return x;
  const ix = highWord(x) & 0x7fffffff;
  const negative = x < 0 || Object.is(x, -0);
  if (ix >= 0x7ff00000) return negative ? -1 : 1;

  if (ix < 0x3feb0000) {
    // |x| < 0.84375
    if (ix < 0x3e300000) {
      // |x| < 2^-28
      if (ix < 0x00800000) return 0.0625 * (16 * x + 16 * efx * x);
      return x + efx * x;
    }
    const z = x * x;
    const z2 = z * z;
    const z4 = z2 * z2;
    const r = pp[0] + z * pp[1] + z2 * (pp[2] + z * pp[3]) + z4 * pp[4];
    const s = 1 + z * qq[1] + z2 * (qq[2] + z * qq[3]) + z4 * (qq[4] + z * qq[5]);
    return x + x * (r / s);
  }
  if (ix < 0x3ff40000) {
    // 0.84375 <= |x| < 1.25
    const s = Math.abs(x) - 1;
    const s2 = s * s;
    const s4 = s2 * s2;
    const s6 = s4 * s2;
    const p = pa[0] + s * pa[1] + s2 * (pa[2] + s * pa[3]) + s4 * (pa[4] + s * pa[5]) + s6 * pa[6];
    const q = 1 + s * qa[1] + s2 * (qa[2] + s * qa[3]) + s4 * (qa[4] + s * qa[5]) + s6 * qa[6];
    return negative ? -erx - p / q : erx + p / q;
  }
  if (ix >= 0x40180000) return negative ? -1 : 1; // |x| >= 6: 1 - tiny rounds to 1

  const ax = Math.abs(x);
  const s = 1 / (ax * ax);
  const s2 = s * s;
  const s4 = s2 * s2;
  const s6 = s4 * s2;
  let R: number;
  let S: number;
  if (ix < 0x4006db6e) {
    // |x| < 1/0.35
    const s8 = s4 * s4;
    R = ra[0] + s * ra[1] + s2 * (ra[2] + s * ra[3]) + s4 * (ra[4] + s * ra[5]) + s6 * (ra[6] + s * ra[7]);
    S = 1 + s * sa[1] + s2 * (sa[2] + s * sa[3]) + s4 * (sa[4] + s * sa[5]) + s6 * (sa[6] + s * sa[7]) + s8 * sa[8];
  } else {
    R = rb[0] + s * rb[1] + s2 * (rb[2] + s * rb[3]) + s4 * (rb[4] + s * rb[5]) + s6 * rb[6];
    S = 1 + s * sb[1] + s2 * (sb[2] + s * sb[3]) + s4 * (sb[4] + s * sb[5]) + s6 * (sb[6] + s * sb[7]);
  }
  const z = clearLowWord(ax);
  const r = Math.exp(-z * z - 0.5625) * Math.exp((z - ax) * (z + ax) + R / S);
  return negative ? r / ax - 1 : 1 - r / ax;
}
