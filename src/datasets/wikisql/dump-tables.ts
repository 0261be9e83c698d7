/**
 * The tables of a MySQL dump as data: each table's columns (name, declared type) and rows,
 * read from its `CREATE TABLE` and `INSERT INTO … VALUES` statements, grouped by the database
 * that `USE` last named. What a converter needs to know about a dump without a server: which
 * columns exist, which are numbers, and what their cells hold.
 *
 * Read: backtick, single- and double-quoted text with MySQL's escapes (`\'`, `\\`, `\n`, …,
 * and a doubled quote), numbers, `NULL`, comments (`-- `, `#`, `/* *\/`). Other statements
 * (CREATE USER, GRANT, LOCK TABLES, …) are skipped.
 */

import { DatasetError } from '../../errors.js';

/** A cell as the dump wrote it: text, a number, or NULL. */
export type DumpCell = string | number | null;

export interface DumpColumn {
  name: string;
  /** The declared type, lower case, without its size: `text`, `int`, `double`, `varchar`, … */
  type: string;
  /** Compared as a number (an integer, fixed or floating-point type), else as text. */
  numeric: boolean;
}

export interface DumpTable {
  name: string;
  columns: DumpColumn[];
  /** Rows in the dump's order, one cell per column (a column an INSERT leaves out is NULL). */
  rows: DumpCell[][];
}

/** Database name → table name → table. Tables created before any `USE` are under `""`. */
export type DumpDatabases = Map<string, Map<string, DumpTable>>;

const NUMERIC_TYPES = new Set(['int', 'integer', 'tinyint', 'smallint', 'mediumint', 'bigint', 'decimal', 'dec', 'numeric', 'fixed', 'float', 'double', 'real']);

/** Words that start a table-level clause inside CREATE TABLE's parentheses, not a column. */
const TABLE_CLAUSES = new Set(['primary', 'key', 'index', 'unique', 'constraint', 'foreign', 'fulltext', 'spatial', 'check', 'period']);

type Token =
  | { kind: 'identifier'; text: string; line: number } // `quoted`
  | { kind: 'word'; text: string; line: number } // bare word or number
  | { kind: 'string'; text: string; line: number }
  | { kind: 'punct'; text: string; line: number };

const ESCAPES: Record<string, string> = { '0': '\0', b: '\b', n: '\n', r: '\r', t: '\t', Z: '\x1a', '%': '\\%', _: '\\_' };

/** Splits dump text into tokens. @throws DatasetError for an unclosed quote. */
function tokenize(text: string, file: string): Token[] {
  const tokens: Token[] = [];
  let line = 1;
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '\n') {
      line++;
      i++;
    } else if (/\s/.test(c)) {
      i++;
    } else if (c === '#' || (c === '-' && text.startsWith('-- ', i)) || (c === '-' && text.startsWith('--\n', i))) {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end === -1 ? text.length : end + 2;
      for (let j = i; j < stop; j++) if (text[j] === '\n') line++;
      i = stop;
    } else if (c === '`' || c === "'" || c === '"') {
      const start = line;
      let value = '';
      i++;
      for (;;) {
        if (i >= text.length) throw new DatasetError({ file, line: start }, `unclosed ${c} quote`);
        const d = text[i]!;
        if (d === '\n') line++;
        if (d === '\\' && c !== '`' && i + 1 < text.length) {
          const e = text[i + 1]!;
          value += ESCAPES[e] ?? e;
          if (e === '\n') line++;
          i += 2;
        } else if (d === c && text[i + 1] === c) {
          value += c;
          i += 2;
        } else if (d === c) {
          i++;
          break;
        } else {
          value += d;
          i++;
        }
      }
      tokens.push({ kind: c === '`' ? 'identifier' : 'string', text: value, line: start });
    } else if (/[\w$.+-]/.test(c) && !(c === '.' && !/\d/.test(text[i + 1] ?? ''))) {
      let j = i + 1;
      // A number's exponent sign belongs to it (1e-5); otherwise +/- end a word.
      while (j < text.length && (/[\w$.]/.test(text[j]!) || (/[+-]/.test(text[j]!) && /\d[eE]$/.test(text.slice(i, j))))) j++;
      tokens.push({ kind: 'word', text: text.slice(i, j), line });
      i = j;
    } else {
      tokens.push({ kind: 'punct', text: c, line });
      i++;
    }
  }
  return tokens;
}

/** Tokens split at top-level `;`. */
function statements(tokens: Token[]): Token[][] {
  const out: Token[][] = [];
  let current: Token[] = [];
  for (const token of tokens) {
    if (token.kind === 'punct' && token.text === ';') {
      if (current.length > 0) out.push(current);
      current = [];
    } else current.push(token);
  }
  if (current.length > 0) out.push(current);
  return out;
}

const isWord = (token: Token | undefined, word: string) => token?.kind === 'word' && token.text.toLowerCase() === word;
const isPunct = (token: Token | undefined, text: string) => token?.kind === 'punct' && token.text === text;

/** A possibly qualified name at `at` (`t`, `db`.`t`): its parts and the index after it. */
function qualifiedName(tokens: Token[], at: number): { database?: string; name: string; next: number } | undefined {
  const first = tokens[at];
  if (first?.kind !== 'identifier' && first?.kind !== 'word') return undefined;
  if (isPunct(tokens[at + 1], '.') && (tokens[at + 2]?.kind === 'identifier' || tokens[at + 2]?.kind === 'word')) {
    return { database: first.text, name: tokens[at + 2]!.text, next: at + 3 };
  }
  // A bare word with a dot inside (db.t written without backticks) is one word token.
  if (first.kind === 'word' && first.text.includes('.')) {
    const [database, name] = first.text.split('.', 2) as [string, string];
    return { database, name, next: at + 1 };
  }
  return { name: first.text, next: at + 1 };
}

/** The parenthesised group starting at `open` split at its top-level commas, and the index after its `)`. */
function group(tokens: Token[], open: number, file: string): { items: Token[][]; next: number } {
  const items: Token[][] = [[]];
  let depth = 0;
  for (let i = open; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (isPunct(token, '(')) {
      if (depth++ === 0) continue;
    } else if (isPunct(token, ')')) {
      if (--depth === 0) return { items: items.filter((item) => item.length > 0), next: i + 1 };
    } else if (depth === 1 && isPunct(token, ',')) {
      items.push([]);
      continue;
    }
    items.at(-1)!.push(token);
  }
  throw new DatasetError({ file, line: tokens[open]?.line }, 'unclosed parenthesis');
}

function columnOf(item: Token[]): DumpColumn | undefined {
  const [name, type] = item;
  if (!name || (name.kind === 'word' && TABLE_CLAUSES.has(name.text.toLowerCase()))) return undefined;
  if (name.kind !== 'identifier' && name.kind !== 'word') return undefined;
  const declared = type?.kind === 'word' ? type.text.toLowerCase() : '';
  return { name: name.text, type: declared, numeric: NUMERIC_TYPES.has(declared) };
}

/** A literal cell: a number (with an optional sign token before it), a string, NULL. */
function cellOf(item: Token[], file: string): DumpCell {
  const text = item.map((t) => t.text).join('');
  const only = item.length === 1 ? item[0]! : undefined;
  if (only?.kind === 'string') return only.text;
  if (isWord(only, 'null')) return null;
  if (item.every((t) => t.kind === 'word' || isPunct(t, '-') || isPunct(t, '+')) && /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) return Number(text);
  if (isWord(only, 'true') || isWord(only, 'false')) return isWord(only, 'true') ? 1 : 0;
  throw new DatasetError({ file, line: item[0]?.line }, `a VALUES cell that is not a literal: ${text}`);
}

/**
 * Reads the tables of a MySQL dump (see the module notes).
 * @param file named in errors.
 * @throws DatasetError naming the file and line for an unclosed quote or parenthesis, an
 *   INSERT into a table the dump did not create, a row whose cell count differs from the
 *   table's columns, or a cell that is not a literal.
 */
export function readDumpTables(text: string, file: string): DumpDatabases {
  const databases: DumpDatabases = new Map();
  let current = '';
  const tablesOf = (database: string) => {
    let tables = databases.get(database);
    if (!tables) databases.set(database, (tables = new Map()));
    return tables;
  };
  for (const statement of statements(tokenize(text, file))) {
    const [first, second] = statement;
    if (isWord(first, 'use') && second) {
      current = second.text;
    } else if (isWord(first, 'create') && isWord(second, 'table')) {
      let at = 2;
      if (isWord(statement[at], 'if') && isWord(statement[at + 1], 'not') && isWord(statement[at + 2], 'exists')) at += 3;
      const name = qualifiedName(statement, at);
      if (!name || !isPunct(statement[name.next], '(')) continue; // CREATE TABLE … LIKE / AS SELECT: no columns to read
      const columns = group(statement, name.next, file).items.map(columnOf).filter((c): c is DumpColumn => c !== undefined);
      tablesOf(name.database ?? current).set(name.name, { name: name.name, columns, rows: [] });
    } else if ((isWord(first, 'insert') || isWord(first, 'replace')) && statement.some((t) => isWord(t, 'values') || isWord(t, 'value'))) {
      let at = 1;
      while (isWord(statement[at], 'into') || isWord(statement[at], 'ignore') || isWord(statement[at], 'low_priority') || isWord(statement[at], 'delayed') || isWord(statement[at], 'high_priority')) at++;
      const name = qualifiedName(statement, at);
      if (!name) continue;
      const table = tablesOf(name.database ?? current).get(name.name);
      if (!table) throw new DatasetError({ file, line: first!.line }, `INSERT INTO ${name.name}, a table this dump does not create`);
      let next = name.next;
      let order = table.columns.map((_, i) => i);
      if (isPunct(statement[next], '(')) {
        const listed = group(statement, next, file);
        order = listed.items.map((item) => {
          const index = table.columns.findIndex((c) => c.name.toLowerCase() === item[0]?.text.toLowerCase());
          if (index < 0) throw new DatasetError({ file, line: item[0]?.line }, `INSERT INTO ${name.name} names a column it does not have: ${item[0]?.text}`);
          return index;
        });
        next = listed.next;
      }
      next++; // VALUES
      while (isPunct(statement[next], '(')) {
        const tuple = group(statement, next, file);
        if (tuple.items.length !== order.length) {
          throw new DatasetError({ file, line: statement[next]!.line }, `a row of ${name.name} has ${tuple.items.length} values for ${order.length} columns`);
        }
        const row: DumpCell[] = table.columns.map(() => null);
        tuple.items.forEach((item, i) => (row[order[i]!] = cellOf(item, file)));
        table.rows.push(row);
        next = tuple.next;
        if (isPunct(statement[next], ',')) next++;
      }
    }
  }
  return databases;
}
