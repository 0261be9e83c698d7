/**
 * The WikiSQL converter without a server: reading a dump's tables, reading logical forms
 * against them, the SQL they become (quoting, aggregates, conditions, numbers vs text), the
 * typed error for a gold that cannot mean one query, and InterCode's whole file when
 * ../shared/intercode-data is there.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadDataset, type Task } from '../../src/datasets/index.js';
import {
  convertWikiSqlGold,
  convertWikiSqlTasks,
  quoteIdentifier,
  quoteText,
  readDumpTables,
  wikiSqlNumber,
  WikiSqlGoldError,
  type DumpDatabases,
} from '../../src/datasets/wikisql/index.js';
import { DatasetError } from '../../src/errors.js';

const DUMP = `
-- a comment; with a semicolon
CREATE DATABASE IF NOT EXISTS \`dev\`;
USE \`dev\`;
/* a block
   comment */
DROP TABLE IF EXISTS \`players\`;
CREATE TABLE \`players\` (
\t\`id_fake\` int NOT NULL AUTO_INCREMENT,
\t\`Player\` text DEFAULT NULL,
\t\`No.\` text DEFAULT NULL,
\t\`School/Club_Team\` text DEFAULT NULL,
\t\`Capital_(_exonym_)\` text,
\t\`Pick_#\` int DEFAULT NULL,
\t\`Total\` double DEFAULT NULL,
\t\`odd\`\`name\` varchar(20),
\tPRIMARY KEY (\`id_fake\`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
LOCK TABLES \`players\` WRITE;
INSERT INTO \`players\` VALUES (1, 'Martin Lewis', '32, 44', 'Butler CC (KS)', 'St. John\\'s', 7, 56.920, 'a'),(2, "Jack O'Neil", '3', 'Duke', 'back\\\\slash', -2, 1.5e3, NULL),(3, 'Pine  29.37', '21', 'it''s', 'x AND \`No.\` = 3', 12, 0.25, 'b');
UNLOCK TABLES;
CREATE TABLE \`spaced\` (\`Original air date\` text, \`No. in series\` int);
INSERT INTO \`spaced\` VALUES ('May 4, 2003', 12);
CREATE TABLE \`agg\` (\`X\` text, \`COUNT X\` text, \`A\` text, \`B\` text);
INSERT INTO \`agg\` (\`A\`, \`B\`, \`X\`) VALUES ('x', 'y', '1'), ('x AND B = y', 'z', '2');
`;

const dbs: DumpDatabases = readDumpTables(DUMP, 'fixture.sql');
const task = (gold: string | string[], index = 0, db: string | undefined = 'dev'): Task => ({ index, id: `t${index}`, query: 'q', gold, metadata: db ? { db } : {} });
const sqlOf = (gold: string) => convertWikiSqlGold(task(gold), dbs, 'tasks.json').sql;
const errorOf = (gold: string | string[], db?: string): WikiSqlGoldError => {
  try {
    convertWikiSqlGold(task(gold, 4, db), dbs, 'tasks.json');
  } catch (error) {
    if (error instanceof WikiSqlGoldError) return error;
    throw error;
  }
  throw new Error(`converted: ${String(gold)}`);
};

describe('reading a MySQL dump', () => {
  it('finds tables by database, columns with their types, and cells with escapes, NULL and numbers', () => {
    const players = dbs.get('dev')!.get('players')!;
    expect(players.columns.map((c) => [c.name, c.type, c.numeric])).toEqual([
      ['id_fake', 'int', true],
      ['Player', 'text', false],
      ['No.', 'text', false],
      ['School/Club_Team', 'text', false],
      ['Capital_(_exonym_)', 'text', false],
      ['Pick_#', 'int', true],
      ['Total', 'double', true],
      ['odd`name', 'varchar', false],
    ]);
    expect(players.rows).toEqual([
      [1, 'Martin Lewis', '32, 44', 'Butler CC (KS)', "St. John's", 7, 56.92, 'a'],
      [2, "Jack O'Neil", '3', 'Duke', 'back\\slash', -2, 1500, null],
      [3, 'Pine  29.37', '21', "it's", 'x AND `No.` = 3', 12, 0.25, 'b'],
    ]);
  });

  it('puts the cells of an INSERT with a column list under those columns (the others NULL)', () => {
    expect(dbs.get('dev')!.get('agg')!.rows).toEqual([
      ['1', null, 'x', 'y'],
      ['2', null, 'x AND B = y', 'z'],
    ]);
  });

  it('names the file and line of an unclosed quote, an INSERT into an unknown table, a short row', () => {
    expect(() => readDumpTables("USE d;\nINSERT INTO t VALUES ('a", 'd.sql')).toThrow(/^d\.sql, line 2: unclosed ' quote$/);
    expect(() => readDumpTables('USE d;\n\nINSERT INTO nope VALUES (1);', 'd.sql')).toThrow(/^d\.sql, line 3: INSERT INTO nope, a table this dump does not create$/);
    expect(() => readDumpTables('CREATE TABLE t (a int, b int);\nINSERT INTO t VALUES (1);', 'd.sql')).toThrow(/line 2: a row of t has 1 values for 2 columns/);
  });
});

describe('quoting', () => {
  it('puts identifiers in backticks (a backtick doubled) and text in single quotes (quote doubled, backslash escaped)', () => {
    expect(quoteIdentifier('School/Club_Team')).toBe('`School/Club_Team`');
    expect(quoteIdentifier('odd`name')).toBe('`odd``name`');
    expect(quoteText("St. John's")).toBe("'St. John''s'");
    expect(quoteText('back\\slash')).toBe("'back\\\\slash'");
  });

  it('quotes column names with spaces, /, ., #, parentheses and values with parentheses and quotes', () => {
    expect(sqlOf('SELECT Player FROM players WHERE School/Club_Team = Butler CC (KS)')).toBe("SELECT `Player` FROM `players` WHERE `School/Club_Team` = 'Butler CC (KS)'");
    expect(sqlOf("SELECT Capital_(_exonym_) FROM players WHERE Player = Jack O'Neil")).toBe("SELECT `Capital_(_exonym_)` FROM `players` WHERE `Player` = 'Jack O''Neil'");
    expect(sqlOf('SELECT odd`name FROM players WHERE Pick_# = 7')).toBe('SELECT `odd``name` FROM `players` WHERE `Pick_#` = 7');
    expect(sqlOf('SELECT Player FROM players')).toBe('SELECT `Player` FROM `players`');
    expect(sqlOf('SELECT MAX No. in series FROM spaced WHERE Original air date = May 4, 2003')).toBe("SELECT MAX(`No. in series`) FROM `spaced` WHERE `Original air date` = 'May 4, 2003'");
  });
});

describe('aggregates', () => {
  it.each(['MAX', 'MIN', 'COUNT', 'SUM', 'AVG'])('%s col becomes a call on the quoted column', (agg) => {
    expect(sqlOf(`SELECT ${agg} Total FROM players WHERE No. = 3`)).toBe(`SELECT ${agg}(\`Total\`) FROM \`players\` WHERE \`No.\` = '3'`);
  });

  it('a select that is both a column and an aggregate of another is ambiguous', () => {
    const error = errorOf('SELECT COUNT X FROM agg');
    expect(error.problem).toBe('ambiguous');
    expect(error.reason).toBe('reads as 2 queries whose values rows hold: COUNT(X) | COUNT X');
  });
});

describe('conditions', () => {
  it('compares a text column with text even when the value looks like a number, a number column with a number', () => {
    expect(sqlOf('SELECT COUNT School/Club_Team FROM players WHERE No. = 3')).toBe("SELECT COUNT(`School/Club_Team`) FROM `players` WHERE `No.` = '3'");
    expect(sqlOf('SELECT Player FROM players WHERE Total = 56.920')).toBe('SELECT `Player` FROM `players` WHERE `Total` = 56.92');
    expect(sqlOf('SELECT Player FROM players WHERE Total > 1,000 AND Pick_# < 0')).toBe('SELECT `Player` FROM `players` WHERE `Total` > 1000 AND `Pick_#` < 0');
  });

  it('parses numbers as WikiSQL did: en-US decimals with group commas, else the first number in the text', () => {
    expect(wikiSqlNumber('1,928')).toEqual({ n: 1928, whole: true });
    expect(wikiSqlNumber(' -2.5e1 ')).toEqual({ n: -25, whole: true });
    expect(wikiSqlNumber('.5')).toEqual({ n: 0.5, whole: true });
    expect(wikiSqlNumber('1,928 (1.89%)')).toEqual({ n: 1, whole: false });
    expect(wikiSqlNumber('−8 strokes')).toEqual({ n: 8, whole: false });
    expect(wikiSqlNumber('none')).toBeUndefined();
    const { sql, notes } = convertWikiSqlGold(task('SELECT Player FROM players WHERE Pick_# = 7th pick'), dbs, 'tasks.json');
    expect(sql).toBe('SELECT `Player` FROM `players` WHERE `Pick_#` = 7');
    expect(notes).toEqual([{ kind: 'number-in-text', column: 'Pick_#', written: '7th pick', used: 7 }]);
  });

  it('splits at " AND " before a column; a value holding " AND <column> = …" is read as the rows say', () => {
    expect(sqlOf('SELECT Player FROM players WHERE No. = 3 AND School/Club_Team = Duke')).toBe("SELECT `Player` FROM `players` WHERE `No.` = '3' AND `School/Club_Team` = 'Duke'");
    // The cell 'x AND `No.` = 3' is a value, and no row has Capital 'x'.
    expect(sqlOf('SELECT Player FROM players WHERE Capital_(_exonym_) = x AND `No.` = 3')).toBe("SELECT `Player` FROM `players` WHERE `Capital_(_exonym_)` = 'x AND `No.` = 3'");
  });

  it('refuses a form that two readings could mean, both held by rows', () => {
    const error = errorOf('SELECT X FROM agg WHERE A = x AND B = y');
    expect(error.problem).toBe('ambiguous');
    expect(error.reason).toBe('reads as 2 queries whose values rows hold: X WHERE [A] = [x] AND [B] = [y] | X WHERE [A] = [x AND B = y]');
  });

  it('writes a value the way the dump stores it when the dump dropped its non-ASCII characters, and notes values no row holds', () => {
    const stored = convertWikiSqlGold(task('SELECT No. FROM players WHERE Player = Pine — 29.37'), dbs, 'tasks.json');
    expect(stored.sql).toBe("SELECT `No.` FROM `players` WHERE `Player` = 'Pine  29.37'");
    expect(stored.notes).toEqual([{ kind: 'stored-form', column: 'Player', written: 'Pine — 29.37', used: 'Pine  29.37' }]);
    const cased = convertWikiSqlGold(task('SELECT No. FROM players WHERE Player = martin LEWIS'), dbs, 'tasks.json');
    expect(cased).toEqual({ sql: "SELECT `No.` FROM `players` WHERE `Player` = 'martin LEWIS'", notes: [] });
    const missing = convertWikiSqlGold(task('SELECT No. FROM players WHERE Player = Nobody — Else AND Total = 3'), dbs, 'tasks.json');
    expect(missing.sql).toBe("SELECT `No.` FROM `players` WHERE `Player` = 'Nobody — Else' AND `Total` = 3");
    expect(missing.notes).toEqual([
      { kind: 'no-row', column: 'Player', written: 'Nobody — Else' },
      { kind: 'no-row', column: 'Total', written: '3' },
    ]);
  });
});

describe('a gold that cannot be converted', () => {
  it('is a WikiSqlGoldError (a DatasetError) naming the file, record, field and task', () => {
    const error = errorOf('SELECT Nope FROM players WHERE No. = 3');
    expect(error).toBeInstanceOf(DatasetError);
    expect(error.code).toBe('DATASET_INVALID');
    expect(error.location).toEqual({ file: 'tasks.json', record: 5, field: 'gold' });
    expect(error.taskId).toBe('t4');
    expect(error.problem).toBe('unknown-column');
    expect(error.message).toBe(
      'tasks.json, record 5, field "gold": task t4: not converted (unknown-column): "SELECT Nope FROM players WHERE No. = 3" selects "Nope", which is no column of players (with or without MAX, MIN, COUNT, SUM, AVG)',
    );
  });

  it.each([
    ['SELECT Player FROM nowhere WHERE No. = 3', 'unknown-table', 'reads from "nowhere", which the dump does not create in this database'],
    ['SELECT Player FROM players WHERE Height = 6', 'unknown-column', 'its condition "Height = 6" is not "column op value" over the columns of players (op: = > <)'],
    ['SELECT Player FROM players WHERE No. >= 3', 'unknown-column', 'its condition "No. >= 3" is not "column op value" over the columns of players (op: = > <)'],
    ['SELECT Player FROM players LIMIT 3', 'malformed', 'has " LIMIT 3" after the table name where " WHERE " or the end should be'],
    ['DELETE FROM players', 'malformed', 'does not start with "SELECT "'],
    ['SELECT Player', 'malformed', 'has no " FROM "'],
    ['SELECT Player FROM players WHERE Total = n/a', 'not-a-number', 'compares the double column Total with "n/a", which holds no number'],
  ])('%s: %s', (gold, problem, reason) => {
    const error = errorOf(gold);
    expect([error.problem, error.reason]).toEqual([problem, reason]);
  });

  it('a list gold, or a database the dump lacks', () => {
    expect(errorOf(['SELECT Player FROM players']).problem).toBe('malformed');
    expect(errorOf('SELECT Player FROM players', 'other').reason).toBe('runs on database "other", which the dump does not create (it has: dev)');
  });

  it('keeps its record, gold and place in the converted file, saying why', () => {
    const conversion = convertWikiSqlTasks([task('SELECT Player FROM players WHERE No. = 3', 0), task('SELECT Player FROM players WHERE Nope = 1', 1)], dbs, 'tasks.json');
    expect(conversion.converted).toBe(1);
    expect(conversion.records).toEqual([
      { db: 'dev', query: 'q', gold: "SELECT `Player` FROM `players` WHERE `No.` = '3'", wikisql_form: 'SELECT Player FROM players WHERE No. = 3' },
      { db: 'dev', query: 'q', gold: 'SELECT Player FROM players WHERE Nope = 1', wikisql_unconverted: 'unknown-column: its condition "Nope = 1" is not "column op value" over the columns of players (op: = > <)' },
    ]);
    expect(conversion.failures.map((f) => f.location.record)).toEqual([2]);
  });
});

const WIKISQL = resolve(fileURLToPath(new URL('../..', import.meta.url)), '../shared/intercode-data/sql/wikisql');
describe.skipIf(!existsSync(WIKISQL))("InterCode's ic_wikisql_dev.json (reference data)", () => {
  it('converts all 196 golds; 12 values are written as the dump stores them', async () => {
    const databases = readDumpTables(readFileSync(`${WIKISQL}/ic_wikisql_dev.sql`, 'utf8'), 'ic_wikisql_dev.sql');
    const tasks = await loadDataset(`${WIKISQL}/ic_wikisql_dev.json`);
    const conversion = convertWikiSqlTasks(tasks, databases, 'ic_wikisql_dev.json');
    expect(conversion.records).toHaveLength(196);
    expect(conversion.failures).toEqual([]);
    expect(conversion.notes.map((n) => [n.index, n.note.kind])).toEqual([22, 27, 35, 36, 125, 126, 127, 172, 173, 174, 178, 181].map((i) => [i, 'stored-form']));
    const gold = (i: number) => conversion.records[i]!.gold;
    expect(gold(1)).toBe("SELECT COUNT(`School/Club_Team`) FROM `table_1_10015132_11` WHERE `No.` = '3'");
    expect(gold(17)).toBe("SELECT `Capital_(_exonym_)` FROM `table_1_1008653_1` WHERE `Capital_(_endonym_)` = 'St. John''s'");
    expect(gold(24)).toBe("SELECT `District` FROM `table_1_10342194_3` WHERE `Total_amount_of_trees` < 150817.6878461314 AND `Amount_of_old_trees` = '1,928 (1.89%)'");
    expect(gold(59)).toBe("SELECT MAX(`%_growth_(2000–2008)`) FROM `table_1_10733530_3` WHERE `Nation` = 'Burundi'");
    expect(gold(72)).toBe('SELECT MAX(`No._in_season`) FROM `table_1_10935205_1` WHERE `Title` = \'"Don\'\'t Stop Believin\'\'"\'');
    expect(gold(103)).toBe(
      "SELECT COUNT(`Round`) FROM `table_1_1132600_3` WHERE `Pole_Position` = 'Michael Schumacher' AND `Fastest_Lap` = 'David Coulthard' AND `Winning_Constructor` = 'McLaren - Mercedes'",
    );
  });
});
