import { CarryRefusal } from '../carry-refusal.js';
import { randomHex } from './random-hex.js';
import { shellQuote } from './shell-script.js';
import type { CommandRunner } from './types.js';

/**
 * The state of an agent's bash session that a new shell does not have, as text a new
 * session replays: working directory, positional parameters, variables with their
 * attributes (exported, integer, arrays, readonly), functions with theirs, aliases, shell
 * and `shopt` options, umask, resource limits, the directory stack, traps and the command
 * hash table. Read by one command in the agent's shell (a subshell: nothing of the parent
 * changes), replayed by one command in the new shell, then read there again and compared
 * ({@link restoreShellState}): what is handed out is equal or refused.
 *
 * Not carried (documented in docs/fork.md): background jobs and their processes; `$RANDOM`
 * and `$SRANDOM` (bash's generator state cannot be read: a new session's sequence differs);
 * `$$`, `$BASHPID`, `$PPID`; `$_`.
 */
export interface ShellState {
  /** The capture's sections, by name (see CAPTURE). */
  readonly sections: Readonly<Record<string, string>>;
}

/** Why a shell's state was not read or not replayed exactly. */
export class ShellStateError extends CarryRefusal<'builtin-overridden' | 'posix-mode' | 'unreadable' | 'not-equal'> {}

/** Every bash builtin: a function of one of these names would change what the capture reads (it is refused). */
const BUILTINS = ('alias bg bind break builtin caller cd command compgen complete compopt continue declare dirs disown echo enable ' +
  'eval exec exit export false fc fg getopts hash help history jobs kill let local logout mapfile popd printf pushd pwd read ' +
  'readarray readonly return set shift shopt source suspend test times trap true type typeset ulimit umask unalias unset wait').split(' ');

/** Variables bash computes or that belong to one process; left out (unset in the capture's subshell). */
const NOT_CARRIED = ('_ BASHPID BASH_SUBSHELL BASH_COMMAND BASH_LINENO BASH_SOURCE BASH_ARGC BASH_ARGV BASH_ARGV0 FUNCNAME LINENO ' +
  'RANDOM SRANDOM EPOCHSECONDS EPOCHREALTIME HISTCMD PIPESTATUS GROUPS DIRSTACK SECONDS').split(' ');

/**
 * How long reading or replaying a shell's state may take. Builtins only, milliseconds when
 * idle; 10 s was passed on the 2-core VM at load average ~120 (8 children restored at once).
 * A read cut short is refused, and the agent's shell may have been restarted by the cut.
 */
const STATE_TIMEOUT_MS = 60_000;

const LIMITS = ['c', 'd', 'e', 'f', 'i', 'l', 'm', 'n', 'q', 'r', 's', 't', 'u', 'v', 'x'];

const SECTIONS = ['status', 'opts', 'shopt', 'cwd', 'seconds', 'args', 'dirs', 'names', 'exported', 'vars', 'functions', 'fattrs', 'aliases', 'umask', 'limits', 'traps'] as const;

/**
 * The capture: a subshell (it inherits everything and changes nothing of the parent) that
 * first enters POSIX mode by an assignment (no command: nothing an agent defined can stand
 * in for it), where special builtins (`export`, `unset`, `set`, `eval`) are found before
 * functions; checks with `export -f` that no function shadows a builtin (refused: the
 * capture's own reads would go through it); leaves POSIX mode; then reads each section
 * behind a separator line. Every command word is quoted (`\declare`): no alias expands.
 */
function captureScript(separator: string): string {
  const section = (name: string) => `\\printf '\\n%s %s\\n' ${separator} ${name}`;
  const lines = [
    '( __ic_so=$SHELLOPTS __ic_bo=$BASHOPTS __ic_bc=${BASH_COMPAT+x} __ic_pc=${POSIXLY_CORRECT+x} __ic_ov=',
    'POSIXLY_CORRECT=y',
    ...BUILTINS.map((name) => `\\export -f ${name} 2>/dev/null && __ic_ov+=" ${name}"`),
    `\\unset -f ${BUILTINS.join(' ')}`,
    '\\unset POSIXLY_CORRECT',
    // Leaving POSIX mode leaves inherit_errexit on (bash 5.2): put back as it was.
    '[[ :$__ic_bo: == *:inherit_errexit:* ]] || \\shopt -u inherit_errexit',
    '[[ -n $__ic_bc ]] || \\unset -v BASH_COMPAT',
    `${section('status')}; \\printf '%s|%s' "$__ic_pc" "$__ic_ov"`,
    `${section('opts')}; \\printf '%s' "$__ic_so"`,
    `${section('shopt')}; \\printf '%s' "$__ic_bo"`,
    `${section('cwd')}; \\printf '%s' "$PWD"`,
    `${section('seconds')}; \\printf '%s' "$SECONDS"`,
    `${section('args')}; __ic_args=("$@"); \\declare -p __ic_args`,
    `${section('dirs')}; __ic_dirs=("\${DIRSTACK[@]}"); \\declare -p __ic_dirs`,
    `\\unset -v __ic_so __ic_bo __ic_bc __ic_pc __ic_ov __ic_args __ic_dirs ${NOT_CARRIED.join(' ')}`,
    '\\unset -v "${!__ic_@}"',
    `${section('names')}; \\compgen -v`,
    `${section('exported')}; \\compgen -e`,
    `${section('vars')}; \\declare -p`,
    `${section('functions')}; \\declare -f`,
    `${section('fattrs')}; \\declare -F`,
    `${section('aliases')}; \\alias -p`,
    `${section('umask')}; \\umask`,
    // Every limit at once (no command substitution per limit: each is a fork); see limitLines.
    `${section('limits')}; \\ulimit -S -a; \\printf '%s\\n' ${HARD_LIMITS}; \\ulimit -H -a`,
    `${section('traps')}; \\trap -p`,
    `\\printf '\\n%s end\\n' ${separator}`,
    ') 2>/dev/null',
  ];
  return lines.join('\n');
}

/** The line between the soft and the hard limits in the `limits` section as read. */
const HARD_LIMITS = '__ic_hard_limits';

/**
 * `ulimit -S -a`, {@link HARD_LIMITS}, `ulimit -H -a` (lines such as `open files  (-n) 1024`)
 * as `flag soft hard` lines for the {@link LIMITS} flags, in their order.
 * @throws ShellStateError when a limit is missing.
 */
function limitLines(listed: string): string {
  const [soft, hard] = listed.split(`\n${HARD_LIMITS}\n`).map((part) => new Map([...part.matchAll(/\(.*?-([a-zA-Z])\)\s+(\S+)$/gm)].map((m) => [m[1]!, m[2]!])));
  if (!soft || !hard) throw new ShellStateError('unreadable', "the shell's resource limits did not come back whole");
  return LIMITS.map((flag) => {
    const [s, h] = [soft.get(flag), hard.get(flag)];
    if (s === undefined || h === undefined) throw new ShellStateError('unreadable', `the shell's resource limit -${flag} did not come back`);
    return `${flag} ${s} ${h}\n`;
  }).join('');
}

/** Lines of `declare -p` that differ between two equal sessions (the shell's parent's pid). */
function comparable(vars: string): string {
  return vars.split('\n').filter((line) => !/^declare -[a-zA-Z]*r[a-zA-Z]* PPID=/.test(line)).join('\n');
}

function parse(output: string, separator: string): ShellState {
  const sections: Record<string, string> = {};
  const marker = new RegExp(`\\n${separator} ([a-z]+)\\n`, 'g');
  const found = [...output.matchAll(marker)];
  if (found.length !== SECTIONS.length + 1 || found.at(-1)![1] !== 'end') {
    throw new ShellStateError('unreadable', "the shell's state did not come back whole (an output limit, or a shell that is gone)", { sections: found.length });
  }
  for (let i = 0; i < SECTIONS.length; i++) {
    if (found[i]![1] !== SECTIONS[i]) throw new ShellStateError('unreadable', "the shell's state came back out of order");
    sections[SECTIONS[i]!] = output.slice(found[i]!.index! + found[i]![0].length, found[i + 1]!.index!);
  }
  const [posix, overridden] = sections.status!.split('|');
  if (overridden) throw new ShellStateError('builtin-overridden', `the agent's shell defines functions named like builtins (${overridden.trim()}): its state cannot be read exactly`, { functions: overridden.trim().split(' ') });
  if (posix || sections.opts!.split(':').includes('posix')) throw new ShellStateError('posix-mode', "the agent's shell is in POSIX mode: its state is not carried");
  sections.vars = comparable(sections.vars!);
  sections.limits = limitLines(sections.limits!);
  return { sections };
}

/**
 * Reads the state of the bash session behind `runner` (a persistent agent shell).
 * @throws ShellStateError when it cannot be read exactly (a builtin overridden, POSIX mode, output cut).
 */
export async function captureShellState(runner: CommandRunner): Promise<ShellState> {
  const separator = `__ic_state_${randomHex(8)}`;
  const result = await runner.run(captureScript(separator), { timeoutMs: STATE_TIMEOUT_MS });
  if (result.events.length > 0) throw new ShellStateError('unreadable', `reading the shell's state was cut short (${result.events.map((e) => e.kind).join(', ')})`);
  return parse(result.output, separator);
}

/** Lines `name` of a word list (compgen's output). */
const words = (text: string) => text.split('\n').filter(Boolean);

/** `declare -a __ic_x=(...)` as `__ic_x=(...)`: an assignment to replay. */
const arrayAssignment = (declared: string, name: string) => declared.trim().replace(new RegExp(`^declare -a ${name}=`), `${name}=`);

/**
 * `declare -p`'s text without the variables bash keeps itself: its readonly ones (a new shell
 * has them) and those it sets as commands run (an assignment to either aborts the rest of
 * the script). They are compared after the replay all the same (BASHOPTS and SHELLOPTS say
 * the options were given, BASH_ARGC and BASH_ARGV the positional parameters).
 */
const withoutBashManaged = (vars: string) =>
  vars
    .split('\n')
    .filter((line) => !/^declare -[a-zA-Z-]* (BASHOPTS|BASH_VERSINFO|EUID|PPID|SHELLOPTS|UID|BASH_ARGC|BASH_ARGV|BASH_LINENO|BASH_SOURCE|PIPESTATUS|FUNCNAME|COMP_WORDBREAKS|_)(=|$)/.test(line))
    .join('\n');

/**
 * Lines that make the options set in `variable` (`BASHOPTS` or `SHELLOPTS`, colon-separated)
 * exactly `wanted` with `set` (`shopt -s`/`-u`, or `set -o`/`+o`), `skipped` aside: builtins
 * and parameter expansions only (the variable read in place, not listed by a command).
 */
function optionsScript(variable: string, wanted: readonly string[], on: string, off: string, skipped: readonly string[] = []): string[] {
  const target = `:${wanted.join(':')}:`;
  const left = skipped.map((name) => ` && $__ic_n != ${shellQuote(name)}`).join('');
  return [
    `__ic_s=$${variable}:; while [[ -n $__ic_s ]]; do __ic_n=\${__ic_s%%:*}; __ic_s=\${__ic_s#*:}; [[ -n $__ic_n${left} && ${shellQuote(target)} != *":$__ic_n:"* ]] && \\builtin ${off} "$__ic_n"; done`,
    ...(wanted.length > 0 ? [`for __ic_n in ${wanted.filter((name) => !skipped.includes(name)).map(shellQuote).join(' ')}; do [[ :$${variable}: == *":$__ic_n:"* ]] || \\builtin ${on} "$__ic_n"; done`] : []),
  ];
}

/**
 * `cd` to the state's working directory (the logical path, as a new shell's `cd` takes it),
 * or end the shell (the replay must not go on elsewhere). Every command word quoted: after
 * the replay, aliases the state carries may expand (a function cannot shadow a builtin: the
 * capture refuses such a state).
 */
const cdScript = (state: ShellState) => `\\builtin cd -L -- ${shellQuote(state.sections.cwd!)} || \\builtin exit 1`;

/**
 * After a {@link cdScript} that follows the replay: `OLDPWD` as the state has it (`cd` set
 * it to the directory it left), declared again from the state's line, or unset where the
 * state has none.
 */
function oldPwdScript(state: ShellState): string {
  const line = state.sections.vars!.split('\n').find((l) => /^declare -[a-zA-Z-]* OLDPWD(=|$)/.test(l));
  return line === undefined ? '\\builtin unset -v OLDPWD' : `{ \\builtin unset -v OLDPWD; \\${line}\n} 2>/dev/null`;
}

/**
 * The script that gives a new session `state` (run in that session, at its top level, so
 * declarations are global), but for its working directory ({@link cdScript}): nothing in it
 * reads or writes a file (`pushd -n` changes no directory), so it may run before the files are there.
 */
function replayScript(state: ShellState): string {
  const s = state.sections;
  const keep = ` ${[...words(s.names!), ...NOT_CARRIED].join(' ')} `;
  const exported = ` ${words(s.exported!).join(' ')} `;
  const fattrs = words(s.fattrs!).map((line) => line.split(' ')).filter((parts) => parts[1] !== '-f');
  const limits = words(s.limits!).map((line) => line.split(' ') as [string, string, string]);
  const options = ` ${s.opts!.split(':').join(' ')} `;
  return [
    // compgen, not \${!prefix@}: a prefix expansion gives COMP_WORDBREAKS its value (bash sets it on first use; declare -p shows it without one till then).
    `for __ic_n in $(\\compgen -v); do [[ $__ic_n == __ic_* || ${shellQuote(keep)} == *" $__ic_n "* ]] || \\builtin unset -v "$__ic_n" 2>/dev/null; done`,
    `{ ${withoutBashManaged(s.vars!)}\n} 2>/dev/null`,
    `for __ic_n in $(\\compgen -e); do [[ ${shellQuote(exported)} == *" $__ic_n "* ]] || \\builtin declare +x "$__ic_n" 2>/dev/null; done`,
    arrayAssignment(s.args!, '__ic_args'),
    '\\builtin set -- "${__ic_args[@]}"',
    arrayAssignment(s.dirs!, '__ic_dirs'),
    '\\builtin dirs -c; for (( __ic_i = ${#__ic_dirs[@]} - 1; __ic_i >= 1; __ic_i-- )); do \\builtin pushd -n "${__ic_dirs[__ic_i]}" >/dev/null; done',
    `SECONDS=${Number(s.seconds) || 0}`,
    s.functions!,
    ...fattrs.map(([, flags, name]) => `\\builtin declare ${flags} ${shellQuote(name ?? '')}`),
    '\\builtin unalias -a',
    s.aliases!.replace(/^alias /gm, '\\alias '),
    `\\builtin umask ${s.umask!.trim()}`,
    ...limits.map(([flag, soft, hard]) => `\\builtin ulimit -S -${flag} ${soft} 2>/dev/null; \\builtin ulimit -H -${flag} ${hard} 2>/dev/null`),
    s.traps!.replace(/^trap -- /gm, '\\trap -- '),
    ...optionsScript('BASHOPTS', s.shopt!.split(':').filter(Boolean), 'shopt -s', 'shopt -u'),
    ...optionsScript('SHELLOPTS', s.opts!.split(':').filter(Boolean), 'set -o', 'set +o', ['xtrace', 'errexit']),
    '\\builtin unset -v __ic_n __ic_i __ic_s __ic_args __ic_dirs',
    ...(options.includes(' errexit ') ? ['\\builtin set -e'] : []),
    ...(options.includes(' xtrace ') ? ['\\builtin set -x'] : []),
  ].join('\n');
}

/**
 * Gives the new session behind `runner` the state `state` was read from, then reads it back
 * and compares (the seconds counter and the shell's parent's pid aside). With `files` (the
 * session's files being laid meanwhile), everything but the working directory is replayed at
 * once, and the `cd` and the read-back wait for `files`; without, one round trip does it all.
 * @throws ShellStateError `not-equal` when the replayed state differs (the sections that do in
 *   details); what `files` rejects with.
 */
export async function restoreShellState(runner: CommandRunner, state: ShellState, files?: Promise<unknown>): Promise<void> {
  const cutShort = (result: { events: readonly { kind: string }[] }) => {
    if (result.events.length > 0) throw new ShellStateError('not-equal', `replaying the shell's state was cut short (${result.events.map((e) => e.kind).join(', ')})`);
  };
  let script = `${cdScript(state)}\n${replayScript(state)}`;
  // A readonly PWD or OLDPWD would make the later cd fail: then all of it waits for the files.
  if (files && /^declare -[a-zA-Z]*r[a-zA-Z]* (OLD)?PWD(=|$)/m.test(state.sections.vars!)) await files;
  else if (files) {
    // Both settled before either's failure is thrown: no command of ours is left running in the shell.
    const [replayed, laid] = await Promise.allSettled([runner.run(replayScript(state), { timeoutMs: STATE_TIMEOUT_MS }), files]);
    if (laid.status === 'rejected') throw laid.reason;
    if (replayed.status === 'rejected') throw replayed.reason;
    cutShort(replayed.value);
    script = `${cdScript(state)}\n${oldPwdScript(state)}`;
  }
  // The capture reads the state back in the same round trip (what the script prints before the capture's first separator is not read).
  const separator = `__ic_state_${randomHex(8)}`;
  const replayed = await runner.run(`${script}\n${captureScript(separator)}`, { timeoutMs: STATE_TIMEOUT_MS });
  cutShort(replayed);
  const now = parse(replayed.output, separator);
  const differ = SECTIONS.filter((name) => name !== 'seconds' && name !== 'status' && now.sections[name] !== state.sections[name]);
  if (differ.length > 0) {
    throw new ShellStateError('not-equal', `the new shell's state differs from the checkpoint's in: ${differ.join(', ')}`, {
      sections: Object.fromEntries(differ.map((name) => [name, { expected: state.sections[name]!.slice(0, 500), found: now.sections[name]!.slice(0, 500) }])),
    });
  }
}
