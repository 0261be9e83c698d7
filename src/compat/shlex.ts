/**
 * Python's `shlex.split(s)`: POSIX mode, `whitespace_split = True`, no comments.
 *
 * docker-py's `exec_run(cmd)` passes a string command through `shlex.split`, and
 * InterCode ran every bash action as `/bin/bash -c "<action>"`. Replaying that split
 * reproduces what bash actually received: double quotes inside the action close and
 * reopen the outer quoting and vanish, backslashes before `"` or `\` are consumed, and
 * an unbalanced quote makes docker-py raise before anything runs.
 */

/** `shlex.split` rejected its input. `message` is Python's ValueError message exactly. */
export class ShlexError extends Error {
  constructor(message: 'No closing quotation' | 'No escaped character') {
    super(message);
    this.name = 'ShlexError';
  }
}

const WHITESPACE = ' \t\r\n';
const QUOTES = '\'"';
const ESCAPE = '\\';
/** Quotes inside which the escape character keeps its meaning. */
const ESCAPED_QUOTES = '"';

/**
 * Splits `s` into words exactly as Python's `shlex.split(s)` does (posix=True,
 * comments=False): whitespace separates words; single quotes keep everything literal;
 * inside double quotes a backslash escapes only `"` and `\` (otherwise it is kept);
 * outside quotes a backslash escapes any character, newline included; quoted empty
 * strings are words (`''` gives `['']`). `#` is an ordinary character.
 *
 * @throws {ShlexError} "No closing quotation" if a quote is left open, "No escaped
 *   character" if the input ends in an unescaped backslash.
 */
export function shlexSplit(s: string): string[] {
  const words: string[] = [];
  let token = '';
  let quoted = false; // a quote was seen, so an empty token is still a word
  let inWord = false;
  let quote: string | null = null; // the open quote character, if any
  let escapedFrom: string | null = null; // after a backslash: 'word' or the open quote

  for (const ch of s) {
    if (escapedFrom !== null) {
      // Within double quotes only the quote and the backslash itself can be escaped.
      if (escapedFrom !== 'word' && ch !== ESCAPE && ch !== escapedFrom) token += ESCAPE;
      token += ch;
      escapedFrom = null;
    } else if (quote !== null) {
      quoted = true;
      if (ch === quote) quote = null;
      else if (ch === ESCAPE && ESCAPED_QUOTES.includes(quote)) escapedFrom = quote;
      else token += ch;
    } else if (WHITESPACE.includes(ch)) {
      if (inWord || quoted) words.push(token);
      token = '';
      quoted = false;
      inWord = false;
    } else {
      inWord = true;
      if (ch === ESCAPE) escapedFrom = 'word';
      else if (QUOTES.includes(ch)) quote = ch;
      else token += ch;
    }
  }
  if (escapedFrom !== null) throw new ShlexError('No escaped character');
  if (quote !== null) throw new ShlexError('No closing quotation');
  if (inWord || quoted) words.push(token);
  return words;
}
