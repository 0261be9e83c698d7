/**
 * Python's `repr` of the values a MySQL/SQLite driver returns, so rows read here print and
 * compare exactly as InterCode's (mysql.connector tuples, compared as `str(row)`).
 */

/** A cell already rendered as Python would print it inside a tuple (`'a'`, `5`, `None`, `Decimal('1.50')`). */
export type PyRepr = string;

const NON_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;

function escapeCodePoint(cp: number): string {
  if (cp < 0x100) return `\\x${cp.toString(16).padStart(2, '0')}`;
  if (cp < 0x10000) return `\\u${cp.toString(16).padStart(4, '0')}`;
  return `\\U${cp.toString(16).padStart(8, '0')}`;
}

/** `repr(str)`: single quotes unless the text has a single quote and no double quote. */
export function pyStr(text: string): PyRepr {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of text) {
    if (ch === quote || ch === '\\') out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch !== ' ' && NON_PRINTABLE.test(ch)) out += escapeCodePoint(ch.codePointAt(0)!);
    else out += ch;
  }
  return out + quote;
}

/** `repr(float)`: the shortest round-trip digits, fixed notation for 1e-4 <= |x| < 1e16. */
export function pyFloat(x: number): PyRepr {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const sign = x < 0 ? '-' : '';
  const [mantissa, exp] = Math.abs(x).toExponential().split('e') as [string, string];
  const digits = mantissa.replace('.', '');
  const decpt = Number(exp) + 1; // value = 0.DIGITS × 10^decpt
  if (decpt <= -4 || decpt > 16) {
    const e = decpt - 1;
    const body = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${body}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  }
  if (decpt <= 0) return `${sign}0.${'0'.repeat(-decpt)}${digits}`;
  if (decpt >= digits.length) return `${sign}${digits}${'0'.repeat(decpt - digits.length)}.0`;
  return `${sign}${digits.slice(0, decpt)}.${digits.slice(decpt)}`;
}

/** `repr(bytes)`. */
export function pyBytes(bytes: Uint8Array): PyRepr {
  const text = Buffer.from(bytes).toString('latin1');
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = `b${quote}`;
  for (const byte of bytes) {
    const ch = String.fromCharCode(byte);
    if (ch === quote || ch === '\\') out += `\\${ch}`;
    else if (byte === 0x0a) out += '\\n';
    else if (byte === 0x0d) out += '\\r';
    else if (byte === 0x09) out += '\\t';
    else if (byte < 0x20 || byte >= 0x7f) out += `\\x${byte.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return out + quote;
}

const int = (s: string) => String(Number(s));

/** `repr(datetime.date)` from `YYYY-MM-DD`; MySQL's zero date is `None`, as mysql.connector gave it. */
export function pyDate(text: string): PyRepr {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!m || m[1] === '0000' || m[2] === '00' || m[3] === '00') return 'None';
  return `datetime.date(${int(m[1]!)}, ${int(m[2]!)}, ${int(m[3]!)})`;
}

/** `repr(datetime.datetime)` from `YYYY-MM-DD hh:mm:ss[.ffffff]` (seconds and microseconds shown only when non-zero). */
export function pyDateTime(text: string): PyRepr {
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$/.exec(text);
  if (!m || m[1] === '0000' || m[2] === '00' || m[3] === '00') return 'None';
  const parts = [m[1], m[2], m[3], m[4], m[5]].map((p) => int(p!));
  const seconds = Number(m[6]);
  const micros = m[7] ? Number(m[7].padEnd(6, '0')) : 0;
  if (seconds !== 0 || micros !== 0) parts.push(String(seconds));
  if (micros !== 0) parts.push(String(micros));
  return `datetime.datetime(${parts.join(', ')})`;
}

/** `repr(datetime.timedelta)` from MySQL's TIME text `[-]hhh:mm:ss[.ffffff]`. */
export function pyTimeDelta(text: string): PyRepr {
  const m = /^(-)?(\d+):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$/.exec(text);
  if (!m) return pyStr(text);
  const sign = m[1] ? -1n : 1n;
  const micros = sign * ((BigInt(m[2]!) * 3600n + BigInt(m[3]!) * 60n + BigInt(m[4]!)) * 1_000_000n + BigInt((m[5] ?? '').padEnd(6, '0') || '0'));
  // Python normalises to days (any sign), 0 <= seconds < 86400, 0 <= microseconds < 10^6.
  const perDay = 86_400_000_000n;
  let days = micros / perDay;
  let rest = micros % perDay;
  if (rest < 0n) {
    rest += perDay;
    days -= 1n;
  }
  const seconds = rest / 1_000_000n;
  const us = rest % 1_000_000n;
  const parts: string[] = [];
  if (days !== 0n) parts.push(`days=${days}`);
  if (seconds !== 0n) parts.push(`seconds=${seconds}`);
  if (us !== 0n) parts.push(`microseconds=${us}`);
  return `datetime.timedelta(${parts.length ? parts.join(', ') : '0'})`;
}

/** `repr(decimal.Decimal(text))`. */
export const pyDecimal = (text: string): PyRepr => `Decimal('${text}')`;

/** `str(tuple)` of rendered cells: `('a',)` for one, `(1, 'b')` for more, `()` for none. */
export function pyTuple(cells: readonly PyRepr[]): string {
  return cells.length === 1 ? `(${cells[0]},)` : `(${cells.join(', ')})`;
}

/** `str(list_of_tuples)`: InterCode's observation text for a result set. */
export function pyRowList(rows: readonly (readonly PyRepr[])[]): string {
  return `[${rows.map(pyTuple).join(', ')}]`;
}
