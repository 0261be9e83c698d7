/** Task datasets: InterCode JSON, JSON Lines, CSV and TSV files. */
export { loadDataset, SUPPORTED_DATASET_EXTENSIONS } from './load.js';
export { goldText, toTask, type Task, type RecordSource } from './task.js';
export { parseJsonDataset, parseJsonlDataset } from './json.js';
export { parseDelimitedDataset, type DelimitedFormat } from './delimited.js';
export { convertWikiSqlGold, convertWikiSqlTasks, readDumpTables, WikiSqlGoldError, type DumpDatabases, type ValueNote, type WikiSqlConversion, type WikiSqlProblem } from './wikisql/index.js';
