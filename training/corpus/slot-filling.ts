/**
 * Slot filling: a command retrieved for a similar description is adapted to the query at
 * hand — its paths (written, relative ones read from /, or "the NAME directory" read as /NAME when none is written), file-name patterns, quoted strings, file names and numbers replaced by
 * those the query names (and, for a file the query names without its directory, by the
 * path an earlier observation showed for it). A command whose slots the query does not
 * name keeps them.
 */

/** What a query (and the episode so far) names that a command may need. */
export interface QuerySlots {
  /** Absolute paths, in order of appearance. */
  paths: string[];
  /** File extensions without the dot ("java" from `".java" files`, `*.java` or "java files"). */
  extensions: string[];
  /** Quoted strings that are neither paths nor patterns ("Hello"). */
  quoted: string[];
  /** Bare file names ("notes.txt"), replaced by a full path when an observation listed one. */
  files: string[];
  /** Numbers with the unit that follows them: days, minutes, lines, a size. */
  numbers: { value: string; unit: 'days' | 'minutes' | 'lines' | 'size' }[];
}

const ABSOLUTE_PATH = /(?:^|[\s"'`(=,])(\/?(?:[\w.+-]+\/)+[\w.+-]*|\/[\w.+-]+)/g;
/** "the testbed directory", "the logs folder": a directory named by a word (read as /word when the query names no path). */
const NAMED_DIRECTORY = /\bthe\s+([a-z][\w-]*)\s+(?:directory|folder|dir)\b/gi;
const NOT_A_DIRECTORY_NAME = new Set(['current', 'home', 'root', 'parent', 'same', 'working', 'given', 'specified', 'entire', 'whole', 'user', 'target', 'destination', 'source', 'output', 'input', 'temporary', 'tmp', 'other']);
/** "php files", "java source files": an extension named as a word. */
const EXTENSION_WORD = /\b(php|java|py|python|txt|text|c|cpp|h|sh|shell|html|js|css|xml|json|log|md|pdf|jpg|png|gz|tar|zip|conf|csv)\s+(?:source\s+|script\s+)?files?\b/gi;
const EXTENSION_OF_WORD: Record<string, string> = { python: 'py', text: 'txt', shell: 'sh' };
const EXTENSION = /(?:^|[\s"'`(*])\.([A-Za-z0-9]{1,6})\b(?![./\w])/g;
const QUOTED = /"([^"]+)"|'([^']+)'|`([^`]+)`/g;
const FILE_NAME = /(?:^|[\s"'`(])([\w-]+\.[A-Za-z0-9]{1,6})(?=$|[\s"'`),.;:?!])/g;
const NUMBER_UNIT = /\b(\d+)\s*(days?|minutes?|mins?|lines?|bytes?|kb|k|mb|m|gb|g|kilobytes?|megabytes?)\b/gi;

const unitOf = (word: string): QuerySlots['numbers'][number]['unit'] => {
  const w = word.toLowerCase();
  if (w.startsWith('day')) return 'days';
  if (w.startsWith('min')) return 'minutes';
  if (w.startsWith('line')) return 'lines';
  return 'size';
};

const sizeSuffix = (word: string) => {
  const w = word.toLowerCase();
  if (w.startsWith('b')) return 'c';
  if (w.startsWith('k')) return 'k';
  if (w.startsWith('m')) return 'M';
  return 'G';
};

const distinct = (items: string[]) => [...new Set(items)];

/** The slots a query names; `observation` (the episode's outputs so far) lends full paths to bare file names. */
export function querySlots(query: string, observation = ''): QuerySlots {
  const written = distinct(
    [...query.matchAll(ABSOLUTE_PATH)]
      .map((m) => m[1]!.replace(/\/$/, ''))
      .filter((p) => p.length > 1 && !/^[\w-]+\.[A-Za-z0-9]{1,6}$/.test(p))
      .map((p) => (p.startsWith('/') ? p : `/${p}`)),
  );
  const named = [...query.matchAll(NAMED_DIRECTORY)].map((m) => m[1]!.toLowerCase()).filter((w) => !NOT_A_DIRECTORY_NAME.has(w));
  const paths = written.length > 0 ? written : distinct(named.map((w) => `/${w}`));
  const extensions = distinct([...[...query.matchAll(EXTENSION)].map((m) => m[1]!), ...[...query.matchAll(EXTENSION_WORD)].map((m) => EXTENSION_OF_WORD[m[1]!.toLowerCase()] ?? m[1]!.toLowerCase())]);
  const quoted = distinct(
    [...query.matchAll(QUOTED)].map((m) => (m[1] ?? m[2] ?? m[3])!).filter((q) => !q.startsWith('/') && !/^\*?\.\w+$/.test(q) && !/^[\w-]+\.\w{1,6}$/.test(q)),
  );
  const fileNames = distinct([...query.matchAll(FILE_NAME)].map((m) => m[1]!).filter((f) => !/^\d+\.\d+$/.test(f)));
  const listed = observation.match(/\/(?:[\w.+-]+\/)*[\w.+-]+/g) ?? [];
  const files = fileNames.map((f) => listed.find((p) => p.endsWith(`/${f}`)) ?? f);
  const numbers = [...query.matchAll(NUMBER_UNIT)].map((m) => {
    const unit = unitOf(m[2]!);
    return { value: unit === 'size' ? `${m[1]}${sizeSuffix(m[2]!)}` : m[1]!, unit };
  });
  return { paths, extensions, quoted, files, numbers };
}

const SHELL_TOKEN = /"[^"]*"|'[^']*'|[|;&<>()]+|[^\s|;&<>()]+/g;
/** Paths a command keeps whatever the query says. */
const SYSTEM_PATH = /^\/(dev|proc|sys|etc|usr|bin|sbin)(\/|$)/;
/** Commands (and any option) after which `.`, `~` or `./x` is a directory argument. */
const TAKES_DIRECTORY = /^(find|ls|du|grep|egrep|cd|tree|chmod|chown|rm|cp|mv|tar|wc|cat|-.*)$/;
const NUMBER_FLAGS: Record<string, QuerySlots['numbers'][number]['unit']> = { '-mtime': 'days', '-atime': 'days', '-ctime': 'days', '-mmin': 'minutes', '-amin': 'minutes', '-cmin': 'minutes', '-size': 'size', '-n': 'lines' };

/**
 * `command` with its slots filled from `slots`: paths (and `.` or `~` as a directory
 * argument) by the query's paths in order (the last one repeated), globs' extensions by the
 * query's, quoted plain strings by the query's quoted strings, file names by the query's,
 * and the numbers of `-mtime`, `-mmin`, `-size`, `-n` by the query's numbers of that unit.
 */
export function adaptCommand(command: string, slots: QuerySlots): string {
  let path = 0;
  let quoted = 0;
  let file = 0;
  const numbers = { days: 0, minutes: 0, lines: 0, size: 0 };
  let previous = '';
  return command.replace(SHELL_TOKEN, (raw) => {
    const flag = previous;
    previous = raw;
    const quote = /^["']/.test(raw) ? raw[0]! : '';
    const token = quote ? raw.slice(1, -1) : raw;
    const wrap = (text: string) => `${quote}${text}${quote}`;
    const unit = NUMBER_FLAGS[flag];
    if (unit && /^[-+]?\d+[ckMG]?$/.test(token)) {
      const of = slots.numbers.filter((n) => n.unit === unit);
      const next = of[Math.min(numbers[unit]++, of.length - 1)];
      if (!next) return raw;
      const sign = /^[-+]/.test(token) ? token[0] : '';
      return wrap(`${sign}${next.value}`);
    }
    if (/^\*[\w-]*\.\w+$/.test(token) && slots.extensions.length > 0) return wrap(token.replace(/\.\w+$/, `.${slots.extensions[0]}`));
    if (slots.paths.length > 0 && !/[*?$]/.test(token) && !token.startsWith('-')) {
      const isPath = (token.startsWith('/') && !SYSTEM_PATH.test(token)) || (/^(\.|~|\.\/[\w./-]*|~\/[\w./-]*)$/.test(token) && TAKES_DIRECTORY.test(flag));
      if (isPath) return wrap(slots.paths[Math.min(path++, slots.paths.length - 1)]!);
    }
    if (quote && quoted < slots.quoted.length && !/[*?/{}$\\[\]]/.test(token)) return wrap(slots.quoted[quoted++]!);
    if (/^[\w-]+\.[A-Za-z]\w{0,5}$/.test(token) && file < slots.files.length) return wrap(slots.files[file++]!);
    return raw;
  });
}
