import type { Command } from 'commander';
import { printable } from './error-boundary.js';

/** The command `args` (argv without node and the script) run: `run`, `images build`…; the program when none. */
export function commandOf(program: Command, args: readonly string[]): Command {
  let command = program;
  for (const word of args) {
    if (word.startsWith('-')) continue;
    const sub = command.commands.find((c) => c.name() === word || c.aliases().includes(word));
    if (!sub) break;
    command = sub;
  }
  return command;
}

/**
 * The one line a usage error commander found (unknown option, missing argument, too many
 * arguments) is reported as: its message without commander's `error: ` prefix, its
 * "did you mean" on the same line, and where the rest is (`intercode run --help`).
 */
export function usageLine(program: Command, args: readonly string[], message: string): string {
  const command = commandOf(program, args);
  const path: string[] = [];
  for (let c: Command | null = command; c; c = c.parent) path.unshift(c.name());
  const text = message
    .replace(/^error: /, '')
    .split('\n')
    .map((line) => line.trim().replace(/^\((.*)\)$/, '$1').replace(/^Did you mean/, 'did you mean'))
    .filter(Boolean)
    .join('; ');
  return `${path[0]}: ${printable(text)} (\`${path.join(' ')} --help\` lists the rest)`;
}
