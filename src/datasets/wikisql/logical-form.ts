/**
 * WikiSQL's readable logical forms, read against a table's schema.
 *
 * A WikiSQL query is one aggregate over one column of one table, filtered by a conjunction of
 * conditions (`agg_ops` = none, MAX, MIN, COUNT, SUM, AVG; `cond_ops` = `=`, `>`, `<`), and its
 * readable form writes them unquoted: `SELECT COUNT School/Club_Team FROM t WHERE No. = 3 AND
 * Position = Guard`. Column names hold spaces, `/`, `(`, `,`, `%` …, and values anything — even
 * ` AND ` — so the form is split only where the schema says a column begins, and every
 * reading whose columns all exist is returned: `A = x AND B = y` also reads as one condition
 * on A with the value `x AND B = y`. Which reading the form means is for the data to say
 * (convert.ts); a form with no reading is refused here.
 */

import type { DumpColumn, DumpTable } from './dump-tables.js';

export const AGGREGATES = ['MAX', 'MIN', 'COUNT', 'SUM', 'AVG'] as const;
export type Aggregate = (typeof AGGREGATES)[number];
export const COMPARISONS = ['=', '>', '<'] as const;
export type Comparison = (typeof COMPARISONS)[number];

export interface FormCondition {
  column: DumpColumn;
  op: Comparison;
  /** The value as the form writes it. */
  value: string;
}

/** One reading of a logical form. */
export interface LogicalForm {
  table: DumpTable;
  aggregate: Aggregate | null;
  column: DumpColumn;
  conditions: FormCondition[];
}

/** Why a form cannot be read as a query (`ambiguous`: read several ways, and the data does not tell which). */
export type FormProblem = 'malformed' | 'unknown-table' | 'unknown-column' | 'ambiguous';

/** The outcome of reading a form: its readings (at least one), or the problem and what to say about it. */
export type FormReading = { ok: true; readings: LogicalForm[] } | { ok: false; problem: Exclude<FormProblem, 'ambiguous'>; reason: string };

/** Every way `text` reads as `column op value ( AND column op value)*` over `columns`. */
function conditionReadings(text: string, columns: readonly DumpColumn[]): FormCondition[][] {
  const readings: FormCondition[][] = [];
  for (const column of columns) {
    for (const op of COMPARISONS) {
      const head = `${column.name} ${op} `;
      if (!text.startsWith(head)) continue;
      const rest = text.slice(head.length);
      readings.push([{ column, op, value: rest }]);
      for (let at = rest.indexOf(' AND '); at >= 0; at = rest.indexOf(' AND ', at + 1)) {
        for (const tail of conditionReadings(rest.slice(at + 5), columns)) readings.push([{ column, op, value: rest.slice(0, at) }, ...tail]);
      }
    }
  }
  return readings;
}

/** Every (aggregate, column) that `text` (the part after SELECT) can be. */
function selectReadings(text: string, columns: readonly DumpColumn[]): { aggregate: Aggregate | null; column: DumpColumn }[] {
  const readings: { aggregate: Aggregate | null; column: DumpColumn }[] = [];
  for (const column of columns) {
    if (text === column.name) readings.push({ aggregate: null, column });
    for (const aggregate of AGGREGATES) if (text === `${aggregate} ${column.name}`) readings.push({ aggregate, column });
  }
  return readings;
}

/** A reading in a few words: `COUNT(c) WHERE [a] = [x] AND [b] > [y]`. */
export function describeReading(form: LogicalForm): string {
  const select = form.aggregate ? `${form.aggregate}(${form.column.name})` : form.column.name;
  const where = form.conditions.map((c) => `[${c.column.name}] ${c.op} [${c.value}]`).join(' AND ');
  return where ? `${select} WHERE ${where}` : select;
}

/**
 * Reads a readable logical form (see the module notes).
 * @param tables the tables of the task's database, by name.
 * @returns its readings, those that split the conditions at more places first; or why there
 *   is none: `malformed` (not `SELECT … FROM …`), `unknown-table`, `unknown-column` (the
 *   selected or a condition's column is not in the table, or a condition has no `=`, `>`, `<`).
 */
export function readLogicalForm(text: string, tables: ReadonlyMap<string, DumpTable>): FormReading {
  if (!text.startsWith('SELECT ')) return { ok: false, problem: 'malformed', reason: 'does not start with "SELECT "' };
  const readings: LogicalForm[] = [];
  const seenTables: string[] = [];
  let selectMisses: string | undefined;
  let whereMisses: string | undefined;
  let trailing: string | undefined;
  for (let at = text.indexOf(' FROM '); at >= 0; at = text.indexOf(' FROM ', at + 1)) {
    const selected = text.slice('SELECT '.length, at);
    const rest = text.slice(at + ' FROM '.length);
    const name = /^\S+/.exec(rest)?.[0] ?? '';
    seenTables.push(name);
    const table = tables.get(name);
    if (!table) continue;
    let where = '';
    if (rest.length > name.length) {
      if (!rest.startsWith(' WHERE ', name.length)) {
        trailing = `has "${rest.slice(name.length)}" after the table name where " WHERE " or the end should be`;
        continue;
      }
      where = rest.slice(name.length + ' WHERE '.length);
    }
    const selects = selectReadings(selected, table.columns);
    if (selects.length === 0) selectMisses = `selects "${selected}", which is no column of ${name} (with or without ${AGGREGATES.join(', ')})`;
    const conditions = where === '' ? [[]] : conditionReadings(where, table.columns);
    if (conditions.length === 0) whereMisses = `its condition "${where}" is not "column op value" over the columns of ${name} (op: ${COMPARISONS.join(' ')})`;
    for (const select of selects) for (const c of conditions) readings.push({ table, ...select, conditions: c });
  }
  if (readings.length > 0) return { ok: true, readings: readings.sort((a, b) => b.conditions.length - a.conditions.length) };
  if (seenTables.length === 0) return { ok: false, problem: 'malformed', reason: 'has no " FROM "' };
  if (trailing) return { ok: false, problem: 'malformed', reason: trailing };
  if (selectMisses ?? whereMisses) return { ok: false, problem: 'unknown-column', reason: (selectMisses ?? whereMisses)! };
  return { ok: false, problem: 'unknown-table', reason: `reads from ${seenTables.map((t) => `"${t}"`).join(' or ')}, which the dump does not create in this database` };
}
