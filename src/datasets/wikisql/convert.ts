/**
 * WikiSQL tasks with readable logical forms as golds (InterCode's `ic_wikisql_dev.json`)
 * turned into tasks whose golds are the SQL those forms mean, over the tables of the dump the
 * tasks run on. Every record is kept, in its order: a converted one gets the SQL as `gold` and
 * the form it came from as `wikisql_form`; one that cannot be converted keeps its gold and
 * says why in `wikisql_unconverted`, so task numbers stay those of the original file (and of
 * the logs recorded on it).
 */

import { DatasetError } from '../../errors.js';
import type { Task } from '../task.js';
import type { DumpDatabases, DumpTable } from './dump-tables.js';
import { describeReading, readLogicalForm, type FormProblem } from './logical-form.js';
import { logicalFormSql, type ValueNote } from './to-sql.js';

/** Why a gold was not converted: the form's problems, a value that holds no number, or a database the dump lacks. */
export type WikiSqlProblem = FormProblem | 'not-a-number' | 'unknown-database';

/** A gold that cannot mean one query; the message names the file, record, field and task. */
export class WikiSqlGoldError extends DatasetError {
  readonly problem: WikiSqlProblem;
  readonly taskId: string;
  readonly form: string;
  readonly reason: string;
  constructor(file: string, task: Task, problem: WikiSqlProblem, reason: string) {
    super({ file, record: task.index + 1, field: 'gold' }, `task ${task.id}: not converted (${problem}): "${formOf(task)}" ${reason}`);
    this.problem = problem;
    this.taskId = task.id;
    this.form = formOf(task);
    this.reason = reason;
  }
}

const formOf = (task: Task) => (Array.isArray(task.gold) ? task.gold.join(' ; ') : task.gold);

function tablesFor(task: Task, databases: DumpDatabases, file: string): ReadonlyMap<string, DumpTable> {
  const named = task.metadata.db;
  if (typeof named === 'string') {
    const tables = databases.get(named);
    if (!tables) throw new WikiSqlGoldError(file, task, 'unknown-database', `runs on database "${named}", which the dump does not create (it has: ${[...databases.keys()].join(', ') || 'none'})`);
    return tables;
  }
  if (databases.size === 1) return [...databases.values()][0]!;
  throw new WikiSqlGoldError(file, task, 'unknown-database', `names no database ("db") and the dump has ${databases.size}`);
}

/**
 * The SQL one task's gold means. A form that reads several ways (a value could hold
 * ` AND <column> = …`) means the reading the table's rows hold: each `=` value is a cell of its
 * column, and a number column's value is a number, not text with a number in it (WikiSQL's
 * questions were written about a row of the table). When no reading is held by the rows, the
 * one that splits at every ` AND ` before a column is taken (with its notes); when several
 * are, the gold is ambiguous.
 * @param file the task file, named in errors.
 * @returns the statement and what was done to its values (see to-sql.ts).
 * @throws WikiSqlGoldError when the gold cannot mean one query: a list of golds or a form
 *   that is not `SELECT … FROM …` (`malformed`), a table, column or database the dump lacks,
 *   several readings the rows hold (`ambiguous`), a number column compared with text that
 *   holds no number (`not-a-number`).
 */
export function convertWikiSqlGold(task: Task, databases: DumpDatabases, file: string): { sql: string; notes: ValueNote[] } {
  if (Array.isArray(task.gold)) throw new WikiSqlGoldError(file, task, 'malformed', 'is a list; a logical form is one string');
  const reading = readLogicalForm(task.gold, tablesFor(task, databases, file));
  if (!reading.ok) throw new WikiSqlGoldError(file, task, reading.problem, reading.reason);
  const statements = reading.readings.map((form) => ({ form, sql: logicalFormSql(form) }));
  const runnable = statements.flatMap(({ form, sql }) => (sql.ok ? [{ form, sql: sql.sql, notes: sql.notes }] : []));
  const held = runnable.filter(({ notes }) => !notes.some((note) => note.kind === 'no-row' || note.kind === 'number-in-text'));
  if (held.length > 1) {
    throw new WikiSqlGoldError(file, task, 'ambiguous', `reads as ${held.length} queries whose values rows hold: ${held.map(({ form }) => describeReading(form)).join(' | ')}`);
  }
  const chosen = held[0] ?? runnable[0];
  if (chosen) return { sql: chosen.sql, notes: chosen.notes };
  const first = statements[0]!.sql;
  throw new WikiSqlGoldError(file, task, 'not-a-number', first.ok ? '' : first.problem.reason);
}

export interface WikiSqlConversion {
  /** Every record, in order, ready to write as an InterCode JSON task file. */
  records: Record<string, unknown>[];
  converted: number;
  /** The golds left as they were, in task order. */
  failures: WikiSqlGoldError[];
  /** Values written as the dump stores them, and `=` values no row holds, in task order. */
  notes: { index: number; id: string; note: ValueNote }[];
}

/** Converts every task (see the module notes); never throws for one gold, lists it instead. */
export function convertWikiSqlTasks(tasks: readonly Task[], databases: DumpDatabases, file: string): WikiSqlConversion {
  const conversion: WikiSqlConversion = { records: [], converted: 0, failures: [], notes: [] };
  for (const task of tasks) {
    const base = { ...task.metadata, query: task.query };
    try {
      const { sql, notes } = convertWikiSqlGold(task, databases, file);
      conversion.records.push({ ...base, gold: sql, wikisql_form: task.gold });
      conversion.converted++;
      for (const note of notes) conversion.notes.push({ index: task.index, id: task.id, note });
    } catch (error) {
      if (!(error instanceof WikiSqlGoldError)) throw error;
      conversion.records.push({ ...base, gold: task.gold, wikisql_unconverted: `${error.problem}: ${error.reason}` });
      conversion.failures.push(error);
    }
  }
  return conversion;
}
