/**
 * A read logical form as the MySQL statement it means, as WikiSQL's own executor ran it
 * (`lib/dbengine.py`): `SELECT AGG(col) FROM table WHERE col op value AND …`.
 *
 * - Identifiers in backticks (a backtick inside doubled), so `School/Club_Team`,
 *   `Capital_(_exonym_)` or `%_growth_(2000–2008)` are names, not expressions.
 * - A value compared with a number column (int, double, …) is a number, parsed as WikiSQL
 *   parses it: an en-US decimal with its `,` group separators dropped (`1,928` → 1928), else
 *   the first number in the text (`1,928 (1.89%)` → 1, as WikiSQL's `num_re` finds it; noted).
 *   A value with no number in it meant no query there (WikiSQL's executor raised): refused.
 * - A value compared with a text column is a quoted string (`'` doubled, `\` escaped), so
 *   `No. = 3` on a text column compares text with text, never `'32, 44' = 32` as numbers
 *   (MariaDB would turn the cell into 32). WikiSQL compared lower-cased values with
 *   lower-cased cells; the dump's `utf8mb4_general_ci` collation compares without case, so the
 *   value keeps its case.
 * - An `=` value no cell of a text column holds, but that the cell holds with the non-ASCII
 *   characters taken out, is written as the cell holds it: InterCode's WikiSQL dump dropped
 *   every non-ASCII character from its cells (not from column names): `Pine — 29.37` is stored
 *   as `Pine  29.37`, `3–2` as `32`. Without this the gold picks no row and the agent that
 *   answers the question scores 0. Such values are reported, as are `=` values no cell holds.
 */

import type { DumpColumn, DumpTable } from './dump-tables.js';
import type { FormCondition, LogicalForm } from './logical-form.js';

/** `name` as a MySQL identifier. */
export function quoteIdentifier(name: string): string {
  return `\`${name.replaceAll('`', '``')}\``;
}

/** `text` as a MySQL string literal (the server's default mode, where `\` escapes). */
export function quoteText(text: string): string {
  return `'${text.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;
}

const EN_US_DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const FIRST_NUMBER = /[-+]?\d*\.\d+|\d+/;

/**
 * `value` as the number WikiSQL compared a number column with, and whether it is the whole
 * value (a decimal) or a number found in text; undefined when it holds none.
 */
export function wikiSqlNumber(value: string): { n: number; whole: boolean } | undefined {
  const decimal = value.trim().replaceAll(',', '');
  if (EN_US_DECIMAL.test(decimal)) return { n: Number(decimal), whole: true };
  const first = FIRST_NUMBER.exec(value);
  return first ? { n: Number(first[0]), whole: false } : undefined;
}

/** A number as a MySQL literal that reads back as the same double. */
function numberLiteral(n: number): string {
  return Number.isInteger(n) && Math.abs(n) < 2 ** 53 ? n.toFixed(0) : String(n);
}

/** What the conversion did to a value that the gold's reader should know of. */
export type ValueNote =
  | { kind: 'stored-form'; column: string; written: string; used: string }
  | { kind: 'number-in-text'; column: string; written: string; used: number }
  | { kind: 'no-row'; column: string; written: string };

/** A condition's value could not mean one query. */
export interface ValueProblem {
  column: string;
  value: string;
  reason: string;
}

/** Text as the collation compares it, near enough to find a cell: without case and trailing spaces. */
const collated = (text: string) => text.toLowerCase().replace(/ +$/, '');
const withoutNonAscii = (text: string) => text.replace(/[^\x00-\x7f]/g, '');

function textValue(condition: FormCondition, table: DumpTable, notes: ValueNote[]): string {
  const { column, op, value } = condition;
  if (op !== '=') return value;
  const index = table.columns.indexOf(column);
  const cells = new Set(table.rows.map((row) => row[index]).filter((cell) => cell !== null).map((cell) => collated(String(cell))));
  if (cells.has(collated(value))) return value;
  const ascii = withoutNonAscii(value);
  if (ascii !== value && cells.has(collated(ascii))) {
    notes.push({ kind: 'stored-form', column: column.name, written: value, used: ascii });
    return ascii;
  }
  notes.push({ kind: 'no-row', column: column.name, written: value });
  return value;
}

function operand(condition: FormCondition, table: DumpTable, notes: ValueNote[]): string | ValueProblem {
  const { column, value } = condition;
  if (!column.numeric) return quoteText(textValue(condition, table, notes));
  const parsed = wikiSqlNumber(value);
  if (parsed === undefined || !Number.isFinite(parsed.n)) return { column: column.name, value, reason: `compares the ${column.type} column ${column.name} with "${value}", which holds no number` };
  const { n, whole } = parsed;
  if (!whole) notes.push({ kind: 'number-in-text', column: column.name, written: value, used: n });
  const index = table.columns.indexOf(column);
  if (condition.op === '=' && !table.rows.some((row) => row[index] === n)) notes.push({ kind: 'no-row', column: column.name, written: value });
  return numberLiteral(n);
}

const select = (column: DumpColumn, aggregate: LogicalForm['aggregate']) => (aggregate ? `${aggregate}(${quoteIdentifier(column.name)})` : quoteIdentifier(column.name));

/**
 * The statement a logical form means (see the module notes).
 * @returns the SQL and the notes on values, or the first condition whose value cannot mean a number.
 */
export function logicalFormSql(form: LogicalForm): { ok: true; sql: string; notes: ValueNote[] } | { ok: false; problem: ValueProblem } {
  const notes: ValueNote[] = [];
  const conditions: string[] = [];
  for (const condition of form.conditions) {
    const value = operand(condition, form.table, notes);
    if (typeof value !== 'string') return { ok: false, problem: value };
    conditions.push(`${quoteIdentifier(condition.column.name)} ${condition.op} ${value}`);
  }
  const where = conditions.length > 0 ? ` WHERE ${conditions.join(' AND ')}` : '';
  return { ok: true, sql: `SELECT ${select(form.column, form.aggregate)} FROM ${quoteIdentifier(form.table.name)}${where}`, notes };
}
