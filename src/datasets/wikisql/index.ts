/** WikiSQL's readable logical forms as SQL: `intercode datasets convert-wikisql`. */
export { readDumpTables, type DumpCell, type DumpColumn, type DumpDatabases, type DumpTable } from './dump-tables.js';
export { readLogicalForm, AGGREGATES, COMPARISONS, type Aggregate, type Comparison, type FormCondition, type FormProblem, type FormReading, type LogicalForm } from './logical-form.js';
export { logicalFormSql, quoteIdentifier, quoteText, wikiSqlNumber, type ValueNote, type ValueProblem } from './to-sql.js';
export { convertWikiSqlGold, convertWikiSqlTasks, WikiSqlGoldError, type WikiSqlConversion, type WikiSqlProblem } from './convert.js';
