import type { Command } from 'commander';
import { readFile, writeFile } from 'node:fs/promises';
import { convertWikiSqlTasks, loadDataset, readDumpTables, type ValueNote, type WikiSqlConversion } from '../datasets/index.js';
import { DatasetError } from '../errors.js';

interface ConvertWikiSqlFlags {
  dump: string;
  out: string;
  json?: boolean;
}

/** A value note as one line of the report. */
function describeNote(note: ValueNote): string {
  switch (note.kind) {
    case 'stored-form':
      return `${note.column} = "${note.written}" written as the dump stores it: "${note.used}" (the dump has no non-ASCII characters in its cells)`;
    case 'number-in-text':
      return `${note.column} is a number column: "${note.written}" compared as ${note.used}, the first number in it (as WikiSQL did)`;
    case 'no-row':
      return `${note.column} = "${note.written}": no row holds this value (the gold's result may be empty)`;
  }
}

/** The `--json` object: counts, the golds left as they were, the notes on values. */
function report(conversion: WikiSqlConversion, out: string) {
  return {
    records: conversion.records.length,
    converted: conversion.converted,
    unconverted: conversion.failures.map((f) => ({ index: f.location.record! - 1, id: f.taskId, problem: f.problem, reason: f.reason, form: f.form })),
    notes: conversion.notes.map(({ index, id, note }) => ({ index, id, ...note })),
    out,
  };
}

async function readDump(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new DatasetError({ file: path }, `cannot read the SQL dump (${(error as NodeJS.ErrnoException).code ?? 'unknown error'})`, error);
  }
}

/** `intercode datasets …`: data steps on task files. */
export function registerDatasetsCommand(program: Command): void {
  const datasets = program.command('datasets').description('data steps on task files');
  datasets
    .command('convert-wikisql')
    .argument('<tasks>', "WikiSQL tasks whose golds are readable logical forms (InterCode's ic_wikisql_dev.json; any task-file format)")
    .description(
      'turn WikiSQL logical forms (`SELECT COUNT School/Club_Team FROM t WHERE No. = 3`) into the SQL they mean over the dump\'s tables; ' +
        'every record is kept in order, a gold that cannot mean one query stays as it was and is listed with the reason',
    )
    .requiredOption('--dump <file>', 'the MySQL dump the tasks run on (its CREATE TABLE and INSERT statements give the columns, their types and cells)')
    .requiredOption('--out <file>', 'the task file to write, InterCode JSON (replaced)')
    .option('--json', 'print one JSON object: {"records","converted","unconverted":[{"index","id","problem","reason","form"}],"notes":[{"index","id","kind","column","written","used"}],"out"}')
    .action(async (tasksFile: string, flags: ConvertWikiSqlFlags) => {
      const tasks = await loadDataset(tasksFile);
      const databases = readDumpTables(await readDump(flags.dump), flags.dump);
      if (![...databases.values()].some((tables) => tables.size > 0)) throw new DatasetError({ file: flags.dump }, 'creates no table (no CREATE TABLE statement)');
      const conversion = convertWikiSqlTasks(tasks, databases, tasksFile);
      await writeFile(flags.out, `[\n${conversion.records.map((r) => JSON.stringify(r)).join(',\n')}\n]\n`);
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(report(conversion, flags.out))}\n`);
        return;
      }
      for (const failure of conversion.failures) console.log(`#${failure.location.record! - 1} not converted (${failure.problem}): ${failure.reason}`);
      for (const { index, note } of conversion.notes) console.log(`#${index} ${describeNote(note)}`);
      console.log(
        `${conversion.records.length} golds: ${conversion.converted} converted to SQL, ${conversion.failures.length} left as they were; ` +
          `${conversion.notes.length} notes on values; wrote ${flags.out}`,
      );
    });
}
