import type { FieldPacket } from 'mysql2';
import { pyBytes, pyDate, pyDateTime, pyDecimal, pyFloat, pyStr, pyTimeDelta, type PyRepr } from '../python-repr.js';

/** MySQL protocol column types (include/mysql_com.h). */
const T = {
  DECIMAL: 0, TINY: 1, SHORT: 2, LONG: 3, FLOAT: 4, DOUBLE: 5, NULL: 6, TIMESTAMP: 7, LONGLONG: 8, INT24: 9,
  DATE: 10, TIME: 11, DATETIME: 12, YEAR: 13, NEWDATE: 14, BIT: 16, NEWDECIMAL: 246,
} as const;
/** The "binary" character set: string-typed columns with it are bytes. */
const BINARY_CHARSET = 63;

export type CellConverter = (value: unknown) => PyRepr;

const text = (v: unknown) => (Buffer.isBuffer(v) ? v.toString('utf8') : String(v));

/**
 * How mysql.connector turned a column of this type into a Python value, as that value's
 * repr. Needs the connection options `dateStrings`, `supportBigNumbers` and
 * `bigNumberStrings` on, and `decimalNumbers` off, so no value loses digits on the way.
 */
export function converterFor(field: FieldPacket): CellConverter {
  const type = field.columnType ?? field.type;
  const convert = ((): CellConverter => {
    switch (type) {
      case T.DECIMAL:
      case T.NEWDECIMAL:
        return (v) => pyDecimal(text(v));
      case T.TINY:
      case T.SHORT:
      case T.LONG:
      case T.LONGLONG:
      case T.INT24:
      case T.YEAR:
        return (v) => text(v);
      case T.FLOAT:
      case T.DOUBLE:
        return (v) => pyFloat(typeof v === 'number' ? v : Number(text(v)));
      case T.DATE:
      case T.NEWDATE:
        return (v) => pyDate(text(v));
      case T.DATETIME:
      case T.TIMESTAMP:
        return (v) => pyDateTime(text(v));
      case T.TIME:
        return (v) => pyTimeDelta(text(v));
      case T.BIT:
        return (v) => (Buffer.isBuffer(v) ? BigInt(`0x${v.toString('hex') || '0'}`).toString() : text(v));
      case T.NULL:
        return () => 'None';
      default:
        return field.characterSet === BINARY_CHARSET
          ? (v) => pyBytes(Buffer.isBuffer(v) ? v : Buffer.from(text(v)))
          : (v) => pyStr(text(v));
    }
  })();
  return (v) => (v === null || v === undefined ? 'None' : convert(v));
}
