/**
 * The CLI's one error boundary: whatever ends a command with an error ends it with one
 * line on stderr and a non-zero exit status, never a stack trace.
 *
 * Bad input is reported where it is found, as a typed error naming the file and the place
 * (src/errors.ts): the boundary only prints those. Anything else reaching it is a bug or a
 * library failure nobody wrapped; it is still one line (its class and first message line),
 * exit status 70, and `INTERCODE_DEBUG=1` adds the stack for whoever fixes it.
 */

import { IntercodeError } from '../errors.js';

/** sysexits.h EX_SOFTWARE: an internal error, not the user's input. */
export const INTERNAL_ERROR_EXIT = 70;

/** Control characters (a binary file's bytes in a parser's message) shown as `\xNN`, so a message stays one line. */
export function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\x00-\x08\x0b-\x1f\x7f\u2028\u2029\n]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** A usage error (bad flag value, unknown option, missing argument), as the shell's builtins report one. */
export const USAGE_ERROR_EXIT = 2;

/** The exit status for `error`: 2 for a bad flag value, 1 for other typed errors, {@link INTERNAL_ERROR_EXIT} for the rest. */
export function exitStatusOf(error: unknown): number {
  if (error instanceof IntercodeError) return error.code === 'CONFIG_INVALID' ? USAGE_ERROR_EXIT : 1;
  return INTERNAL_ERROR_EXIT;
}

/** The one line the boundary prints for `error` (without the `intercode: ` prefix and newline). */
export function describeFailure(error: unknown): string {
  if (error instanceof IntercodeError) return printable(error.message);
  const name = error instanceof Error ? error.name : typeof error;
  const message = error instanceof Error ? error.message : String(error);
  const first = printable(message.split('\n')[0] ?? '').slice(0, 300);
  return `internal error (${name}): ${first} — a bug: please report it with the command; INTERCODE_DEBUG=1 shows the stack`;
}

/** Prints `error` as the boundary does and returns its exit status. */
export function reportFailure(error: unknown, write: (text: string) => void = (t) => process.stderr.write(t)): number {
  write(`intercode: ${describeFailure(error)}\n`);
  if (process.env.INTERCODE_DEBUG && error instanceof Error && error.stack) write(`${error.stack}\n`);
  return exitStatusOf(error);
}
