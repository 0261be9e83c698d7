/**
 * A reader for the TOML that task.toml files use: tables, arrays of tables, dotted and
 * quoted keys, strings (basic, literal, multi-line), integers, floats, booleans, arrays and
 * inline tables. Dates are read as strings. (The project has no TOML library among its
 * dependencies; this covers TOML 1.0's value grammar but for dates.)
 */

export type TomlValue = string | number | boolean | TomlValue[] | TomlTable;
export interface TomlTable {
  [key: string]: TomlValue;
}

/** A TOML syntax error: `line` is 1-based; `problem` is what is wrong there (the message is both). */
export class TomlSyntaxError extends Error {
  constructor(
    readonly line: number,
    readonly problem: string,
  ) {
    super(`line ${line}: ${problem}`);
  }
}

const BARE_KEY = /[A-Za-z0-9_-]/;
const ESCAPES: Record<string, string> = { b: '\b', t: '\t', n: '\n', f: '\f', r: '\r', '"': '"', '\\': '\\' };

/** @throws TomlSyntaxError naming the line. */
export function parseToml(text: string): TomlTable {
  let i = 0;
  const root: TomlTable = {};
  let current = root;
  const line = () => text.slice(0, i).split('\n').length;
  const fail = (problem: string): never => {
    throw new TomlSyntaxError(line(), problem);
  };
  const skipSpace = () => {
    while (text[i] === ' ' || text[i] === '\t') i++;
  };
  const skipComment = () => {
    if (text[i] === '#') while (i < text.length && text[i] !== '\n') i++;
  };
  /** White space, comments and new lines (inside arrays). */
  const skipAll = () => {
    for (;;) {
      skipSpace();
      skipComment();
      if (text[i] === '\n' || text[i] === '\r') i++;
      else return;
    }
  };
  const endOfLine = () => {
    skipSpace();
    skipComment();
    if (text[i] === '\r') i++;
    if (i < text.length && text[i] !== '\n') fail(`unexpected "${text[i]}"`);
    i++;
  };

  function basicString(): string {
    const multi = text.startsWith('"""', i);
    i += multi ? 3 : 1;
    if (multi && text[i] === '\n') i++;
    let out = '';
    for (;;) {
      if (i >= text.length) fail('unterminated string');
      if (multi && text.startsWith('""""', i)) {
        // Up to two quotes may come right before the closing three.
        out += '"';
        i++;
        continue;
      }
      if (multi ? text.startsWith('"""', i) : text[i] === '"') {
        i += multi ? 3 : 1;
        return out;
      }
      const c = text[i]!;
      if (!multi && c === '\n') fail('new line in a string');
      if (c !== '\\') {
        out += c;
        i++;
        continue;
      }
      const e = text[i + 1]!;
      if (multi && (e === '\n' || e === ' ' || e === '\r')) {
        // A line-ending backslash trims the new line and the white space after it.
        i++;
        while (/\s/.test(text[i] ?? '')) i++;
        continue;
      }
      if (e === 'u' || e === 'U') {
        const len = e === 'u' ? 4 : 8;
        const hex = text.slice(i + 2, i + 2 + len);
        if (!/^[0-9A-Fa-f]+$/.test(hex) || hex.length !== len) fail('bad unicode escape');
        out += String.fromCodePoint(parseInt(hex, 16));
        i += 2 + len;
        continue;
      }
      if (!(e in ESCAPES)) fail(`bad escape \\${e}`);
      out += ESCAPES[e];
      i += 2;
    }
  }

  function literalString(): string {
    const multi = text.startsWith("'''", i);
    i += multi ? 3 : 1;
    if (multi && text[i] === '\n') i++;
    const end = text.indexOf(multi ? "'''" : "'", i);
    if (end < 0) fail('unterminated string');
    const out = text.slice(i, end);
    if (!multi && out.includes('\n')) fail('new line in a string');
    i = end + (multi ? 3 : 1);
    return out;
  }

  function key(): string[] {
    const parts: string[] = [];
    for (;;) {
      skipSpace();
      if (text[i] === '"') parts.push(basicString());
      else if (text[i] === "'") parts.push(literalString());
      else {
        const start = i;
        while (i < text.length && BARE_KEY.test(text[i]!)) i++;
        if (i === start) fail('expected a key');
        parts.push(text.slice(start, i));
      }
      skipSpace();
      if (text[i] !== '.') return parts;
      i++;
    }
  }

  function value(): TomlValue {
    skipSpace();
    const c = text[i];
    if (c === '"') return basicString();
    if (c === "'") return literalString();
    if (c === '[') {
      i++;
      const items: TomlValue[] = [];
      for (;;) {
        skipAll();
        if (text[i] === ']') {
          i++;
          return items;
        }
        items.push(value());
        skipAll();
        if (text[i] === ',') i++;
        else if (text[i] !== ']') fail('expected , or ] in an array');
      }
    }
    if (c === '{') {
      i++;
      const table: TomlTable = {};
      skipSpace();
      if (text[i] === '}') {
        i++;
        return table;
      }
      for (;;) {
        const path = key();
        if (text[i] !== '=') fail('expected =');
        i++;
        assign(table, path, value());
        skipSpace();
        if (text[i] === ',') i++;
        else if (text[i] === '}') {
          i++;
          return table;
        } else fail('expected , or } in an inline table');
      }
    }
    const start = i;
    while (i < text.length && /[^\s,\]}#]/.test(text[i]!)) i++;
    const word = text.slice(start, i);
    if (word === 'true') return true;
    if (word === 'false') return false;
    const plain = word.replaceAll('_', '');
    if (/^[+-]?(inf|nan)$/.test(plain)) return plain.endsWith('inf') ? (plain.startsWith('-') ? -Infinity : Infinity) : NaN;
    if (/^0x[0-9a-fA-F]+$|^0o[0-7]+$|^0b[01]+$/.test(plain)) return Number(plain);
    if (/^[+-]?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(plain)) return Number(plain);
    // Dates and times: kept as written.
    if (/^\d{4}-\d{2}-\d{2}|^\d{2}:\d{2}/.test(word)) {
      let more = word;
      if (/^\d{4}-\d{2}-\d{2}$/.test(word) && / \d{2}:/.test(text.slice(i, i + 4))) {
        const rest = /^ [0-9:.+\-Z]+/.exec(text.slice(i))![0];
        i += rest.length;
        more += rest;
      }
      return more;
    }
    return fail(word ? `cannot read value "${word}"` : 'expected a value');
  }

  function assign(table: TomlTable, path: readonly string[], v: TomlValue): void {
    let t = table;
    for (const part of path.slice(0, -1)) {
      const next = t[part] ?? (t[part] = {});
      if (typeof next !== 'object' || Array.isArray(next)) fail(`"${part}" is not a table`);
      t = next as TomlTable;
    }
    const last = path.at(-1)!;
    if (last in t) fail(`"${path.join('.')}" is defined twice`);
    t[last] = v;
  }

  function tableAt(path: readonly string[], arrayItem: boolean): TomlTable {
    let t = root;
    path.forEach((part, n) => {
      const isLast = n === path.length - 1;
      let next = t[part];
      if (isLast && arrayItem) {
        if (next === undefined) next = t[part] = [];
        if (!Array.isArray(next)) fail(`"${path.join('.')}" is not an array of tables`);
        const item: TomlTable = {};
        (next as TomlValue[]).push(item);
        t = item;
        return;
      }
      if (next === undefined) next = t[part] = {};
      if (Array.isArray(next)) next = next.at(-1) ?? fail(`"${part}" is an empty array`);
      if (typeof next !== 'object' || next === null) fail(`"${part}" is not a table`);
      t = next as TomlTable;
    });
    return t;
  }

  while (i < text.length) {
    skipAll();
    if (i >= text.length) break;
    if (text[i] === '[') {
      const array = text[i + 1] === '[';
      i += array ? 2 : 1;
      const path = key();
      if (!text.startsWith(array ? ']]' : ']', i)) fail('expected ] after a table name');
      i += array ? 2 : 1;
      current = tableAt(path, array);
      endOfLine();
      continue;
    }
    const path = key();
    if (text[i] !== '=') fail('expected = after a key');
    i++;
    assign(current, path, value());
    endOfLine();
  }
  return root;
}
