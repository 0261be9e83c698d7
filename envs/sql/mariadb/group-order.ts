/**
 * MariaDB sorts the result of a GROUP BY by the group key when the query has no ORDER BY;
 * MySQL 8 (InterCode's server) does not: its groups come out in the order the plan first
 * met them. With InterCode's reward, which scores row order even without ORDER BY, a right
 * answer then scores 0 or −1 here where it scored 1 there. `ORDER BY NULL` is MariaDB's own
 * way to say "groups unsorted"; with it MariaDB returns them first-seen as MySQL 8 does.
 *
 * {@link withUnsortedGroups} adds it to every query block that groups without sorting: the
 * outer query, derived tables, CTEs and subqueries. It reads only what it must (string
 * literals, quoted names, comments, parentheses and a few keywords), not a full grammar, and
 * leaves alone what it cannot place safely: members of UNION/INTERSECT/EXCEPT (MariaDB
 * allows ORDER BY there only inside parentheses), WITH ROLLUP, and text with MySQL's
 * executable comments.
 */

/** A word or punctuation of the statement with where it starts and ends; strings, quoted names and comments are skipped. */
interface Token {
  text: string;
  start: number;
  end: number;
}

/** White space, comments (`-- ` needs the space, as in MySQL), quoted text, words, parentheses, `;`, and runs of anything else. */
const TOKEN = /\s+|--(?=\s|$)[^\n]*|#[^\n]*|\/\*[\s\S]*?(?:\*\/|$)|'(?:[^'\\]|\\[\s\S]|'')*'?|"(?:[^"\\]|\\[\s\S]|"")*"?|`(?:[^`]|``)*`?|[A-Za-z_][A-Za-z0-9_$]*|[()]|;|[^\s()'"`;#A-Za-z_/-]+|[-/]/gy;

function tokens(sql: string): Token[] {
  const out: Token[] = [];
  TOKEN.lastIndex = 0;
  for (let m = TOKEN.exec(sql); m && m[0] !== ''; m = TOKEN.exec(sql)) {
    const text = m[0];
    const first = text[0]!;
    if (/\s/.test(first) || first === '#' || text.startsWith('--') || text.startsWith('/*')) continue;
    out.push({ text: /^[A-Za-z_]/.test(text) ? text.toUpperCase() : text, start: m.index, end: m.index + text.length });
  }
  return out;
}

/** What one query block (the statement, or one pair of parentheses) has shown so far. */
interface Block {
  grouped: boolean;
  ordered: boolean;
  /** UNION, INTERSECT, EXCEPT, or WITH ROLLUP: blocks this rewrite leaves alone. */
  unsafe: boolean;
  /** Where ORDER BY NULL goes: after the last token of the GROUP BY / HAVING / WINDOW clauses. */
  insertAt: number | null;
  /** End of the last token seen in this block. */
  lastEnd: number;
}

const newBlock = (): Block => ({ grouped: false, ordered: false, unsafe: false, insertAt: null, lastEnd: 0 });
/** Clauses that follow ORDER BY in a query block, so ORDER BY NULL goes before them. */
const AFTER_ORDER_BY = new Set(['LIMIT', 'OFFSET', 'FETCH', 'FOR', 'INTO', 'LOCK', 'PROCEDURE']);
const SET_OPERATORS = new Set(['UNION', 'INTERSECT', 'EXCEPT', 'MINUS']);
const READ_STATEMENT = new Set(['SELECT', 'WITH', '(']);

/**
 * Whether `sql` is a read that sorts rows: an ORDER BY anywhere, or a window (`OVER`). Such a
 * statement may have to break ties, which MariaDB does by memory address over an in-memory
 * temporary table (see session.ts).
 */
export function sortsRows(sql: string): boolean {
  if (!/order\s+by|over/i.test(sql)) return false;
  const list = tokens(sql);
  if (list.length === 0 || !READ_STATEMENT.has(list[0]!.text)) return false;
  return list.some((t, i) => (t.text === 'ORDER' && list[i + 1]?.text === 'BY') || (t.text === 'OVER' && (list[i + 1]?.text === '(' || /^[A-Z_]/.test(list[i + 1]?.text ?? ''))));
}

/**
 * `sql` with ` ORDER BY NULL` after the grouping clauses of every query block that has GROUP
 * BY and no ORDER BY, or null when nothing needs to change (or the statement is not a read).
 */
export function withUnsortedGroups(sql: string): string | null {
  if (sql.includes('/*!') || !/group\s+by/i.test(sql)) return null;
  const list = tokens(sql);
  if (list.length === 0 || !READ_STATEMENT.has(list[0]!.text)) return null;
  const inserts: number[] = [];
  const stack: Block[] = [newBlock()];
  const close = (block: Block) => {
    if (block.grouped && !block.ordered && !block.unsafe) inserts.push(block.insertAt ?? block.lastEnd);
  };
  for (let i = 0; i < list.length; i++) {
    const token = list[i]!;
    const block = stack[stack.length - 1]!;
    const next = list[i + 1]?.text;
    if (token.text === '(') {
      stack.push(newBlock());
      continue;
    }
    if (token.text === ')' || token.text === ';') {
      if (token.text === ';' || stack.length > 1) close(stack.pop()!);
      if (token.text === ';') break;
      stack[stack.length - 1]!.lastEnd = token.end;
      continue;
    }
    if (token.text === 'GROUP' && next === 'BY') block.grouped = true;
    else if (token.text === 'ORDER' && next === 'BY') block.ordered = true;
    else if (SET_OPERATORS.has(token.text) || (token.text === 'WITH' && next === 'ROLLUP')) block.unsafe = true;
    else if (block.grouped && block.insertAt === null && AFTER_ORDER_BY.has(token.text)) block.insertAt = block.lastEnd;
    block.lastEnd = token.end;
  }
  while (stack.length > 0) close(stack.pop()!);
  if (inserts.length === 0) return null;
  let out = sql;
  for (const at of [...new Set(inserts)].sort((a, b) => b - a)) out = `${out.slice(0, at)} ORDER BY NULL${out.slice(at)}`;
  return out;
}
