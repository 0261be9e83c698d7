/**
 * Getting the action out of what a model wrote: code fences (with or without a language
 * tag, closed or cut off), bare `submit`/`skip`, label prefixes, and per-language rules for
 * replies without a fence.
 */

/** How an env's actions look in a model's reply. */
export interface ActionSyntax {
  /** Fence tags that mark this env's code, lower case (```bash, ```sh …); preferred over other fences. */
  fenceTags: readonly string[];
  /**
   * A reply without a fence: `whole` takes the whole reply as the action (a shell or an
   * interpreter runs whatever it is given); `sql` takes the first SQL statement in it, from
   * an upper-case SELECT, WITH, SHOW, DESCRIBE, DESC or EXPLAIN to the first `;`, and finds no
   * action in prose without one (a fenced statement may be anything).
   */
  unfenced: 'whole' | 'sql';
  /** Keep indentation and inner blank lines (Python); otherwise the action is trimmed. */
  keepIndentation?: boolean;
  /** Statements end at the first `;` outside quotes (SQL runs one statement per action). */
  singleStatement?: boolean;
}

export type Extraction = { action: string } | { action: null; problem: string };

interface Fence {
  tag: string;
  body: string;
}

const CONTROL = /^(submit|skip)(\s+\S[\s\S]*)?$/i;
const LABEL = /^(?:bash|shell|sh|sql|python|command|query|action|code)\s*:\s*/i;
/** Statements that read (what the SQL tasks ask for); prose is searched for these only. */
const SQL_START = /\b(SELECT|WITH|SHOW|DESCRIBE|DESC|EXPLAIN)\b/;

/**
 * The action in `reply`, or why there is none.
 *
 * - Empty or blank reply: none.
 * - `submit`, `skip`, `submit <answer>` as the whole reply: that, as is.
 * - Fenced code: the first fence tagged with one of `syntax.fenceTags`, else the first
 *   untagged fence, else the first fence; text around fences is ignored. A fence the reply
 *   never closes (a cut-off reply) runs to the end. An empty fence is no action.
 * - No fence: a reply that is one inline code span (`` `ls -l` ``) gives its content; a
 *   leading label (`bash:`, `Command:`, `SQL:`) is dropped; then `syntax.unfenced` decides.
 */
export function extractAction(reply: string, syntax: ActionSyntax): Extraction {
  const text = reply.trim();
  if (text === '') return { action: null, problem: 'the reply was empty' };
  if (CONTROL.test(text) && !text.includes('```')) return { action: text };
  const fences = findFences(text);
  if (fences.length > 0) {
    const fence =
      fences.find((f) => syntax.fenceTags.includes(f.tag)) ?? fences.find((f) => f.tag === '') ?? fences[0]!;
    return finish(fence.body, syntax, 'the code block was empty');
  }
  const inline = /^`([^`]+)`$/.exec(text);
  const bare = (inline ? inline[1]! : text).replace(LABEL, '');
  if (syntax.unfenced === 'whole') return finish(bare, syntax, 'the reply was empty');
  const start = SQL_START.exec(bare);
  if (!start) return { action: null, problem: 'the reply held no code block and no SQL statement' };
  return finish(bare.slice(start.index), syntax, 'the reply was empty');
}

function finish(code: string, syntax: ActionSyntax, emptyProblem: string): Extraction {
  const action = cleanCode(code, syntax);
  return action === '' ? { action: null, problem: emptyProblem } : { action };
}

/** Code as an env runs it: the first statement where the env runs one, trimmed (keeping indentation where it matters). */
export function cleanCode(code: string, syntax: ActionSyntax): string {
  const action = syntax.singleStatement ? firstStatement(code) : code;
  return syntax.keepIndentation ? action.replace(/^(?:[ \t]*\r?\n)+/, '').trimEnd() : action.trim();
}

/**
 * Every fenced block in order. A fence is a run of three or more backticks and is closed
 * by a run of the same length (so ```` ````bash ```` can hold code containing ```). The
 * opening line's first word is the tag when more follows on the next line
 * (```` ```bash ````) or when it is a known tag followed by code on the same line
 * (```` ```sql SELECT 1``` ````); a one-line ```` ```ls -l``` ```` is untagged.
 */
function findFences(text: string): Fence[] {
  const fences: Fence[] = [];
  const opening = /`{3,}/g;
  let open: RegExpExecArray | null;
  while ((open = opening.exec(text)) !== null) {
    const run = open[0];
    const start = open.index + run.length;
    const closing = new RegExp(`(?<!\`)${run}(?!\`)`, 'g');
    closing.lastIndex = start;
    const close = closing.exec(text);
    fences.push(splitTag(close ? text.slice(start, close.index) : text.slice(start)));
    if (!close) break;
    opening.lastIndex = close.index + run.length;
  }
  return fences;
}

function splitTag(inner: string): Fence {
  const newline = inner.indexOf('\n');
  const firstLine = newline === -1 ? inner : inner.slice(0, newline);
  const rest = newline === -1 ? '' : inner.slice(newline + 1);
  const word = /^([A-Za-z0-9_+#.-]*)\s*$/.exec(firstLine);
  if (word && newline !== -1) return { tag: word[1]!.toLowerCase(), body: rest };
  const sameLine = /^([A-Za-z]+)[ \t]+(\S[\s\S]*)$/.exec(firstLine);
  if (sameLine && KNOWN_TAGS.has(sameLine[1]!.toLowerCase())) {
    return { tag: sameLine[1]!.toLowerCase(), body: [sameLine[2]!, rest].filter(Boolean).join('\n') };
  }
  return { tag: '', body: inner };
}

const KNOWN_TAGS = new Set(['bash', 'sh', 'shell', 'console', 'sql', 'mysql', 'python', 'py', 'python3']);

/** Up to the first `;` outside single, double or back quotes. */
function firstStatement(code: string): string {
  let quote: string | null = null;
  for (let i = 0; i < code.length; i++) {
    const c = code[i]!;
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = null;
    } else if (c === "'" || c === '"' || c === '`') quote = c;
    else if (c === ';') return code.slice(0, i);
  }
  return code;
}
