import type { Task } from '../../src/datasets/index.js';
import type { QueryOutcome } from './backend.js';
import { pyStr, pyTuple, type PyRepr } from './python-repr.js';

/** Each result's rows as `str(row)`, made once per result: a cached gold result is scored many times. */
const rowStringsOf = new WeakMap<readonly PyRepr[][], string[]>();
export function rowStrings(rows: readonly PyRepr[][]): string[] {
  let strings = rowStringsOf.get(rows);
  if (!strings) rowStringsOf.set(rows, (strings = rows.map(pyTuple)));
  return strings;
}

/**
 * A gold's rows as InterCode's reward compares them. InterCode: a gold that fails leaves an
 * empty result; a statement without rows compares as []. A gold stopped by the time limit
 * has no result (InterCode waited for it): it matches nothing (null), or an agent that holds a
 * lock the gold waits for would score an empty answer 1.0. So does one not run (notRun).
 */
export function goldRowsOf(outcome: QueryOutcome): string[] | null {
  if (outcome.kind === 'rows') return rowStrings(outcome.rows);
  return outcome.kind === 'error' && (outcome.timedOut || outcome.notRun === true) ? null : [];
}

/** InterCode's observation for an outcome: `str(rows)`, or `Error executing query: …`. */
export function renderOutcome(outcome: QueryOutcome): string {
  switch (outcome.kind) {
    case 'rows': {
      const text = `[${rowStrings(outcome.rows).join(', ')}]`;
      if (outcome.truncated === 'rows') return `${text}\n[intercode: only the first ${outcome.rows.length} rows are shown; the query was stopped there]`;
      if (outcome.truncated === 'bytes') return `${text}\n[intercode: only the first ${outcome.rows.length} rows are shown (the result passed the byte limit); the query was stopped there]`;
      return text;
    }
    case 'ok':
      return `[intercode: the statement returned no rows (${outcome.affectedRows} rows affected)]`;
    case 'error':
      return `Error executing query: ${outcome.message}`;
  }
}

/** The handicap text InterCode's evaluation gave the agent: each table with `str(list_of_columns)`. */
export function handicapText(tables: readonly { table: string; columns: readonly string[] }[]): string {
  return `MySQL tables, with their properties\n${tables.map((t) => `- ${t.table}: [${t.columns.map(pyStr).join(', ')}]\n`).join('')}`;
}

/** The task's own table list (InterCode's `db_tables`: name → columns), when it has one. */
export function taskTables(task: Task): { table: string; columns: string[] }[] | undefined {
  const tables = task.metadata.db_tables;
  if (!tables || typeof tables !== 'object' || Array.isArray(tables)) return undefined;
  return Object.entries(tables as Record<string, unknown>).map(([table, columns]) => ({
    table,
    columns: Array.isArray(columns) ? columns.map(String) : [],
  }));
}
