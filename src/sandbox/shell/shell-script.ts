import { IDLE_PROCESS_NAME } from '../types.js';

/**
 * The report the shell writes on descriptor 4 after a command: `seq` and `status` are shell
 * words; counters are read when `counters` (a shell word) is 1. Inline in the loop, not a
 * function: the loop is parsed once, before any command runs, so a command cannot redefine
 * the report itself. It can still shadow `builtin` with a function (bash looks functions up
 * first) and so misstate its own later reports' status, cwd and counters (docs/security.md).
 */
const report = (seq: string, status: string, counters: string) => String.raw`
  __ic_p=-1 __ic_m=-1 __ic_o=-1
  if [[ ${counters} == 1 && -n $__ic_pc ]]; then
    {
      builtin read -r __ic_p < "$__ic_pc"
      builtin read -r __ic_m < "$__ic_pm"
      if [[ -r $__ic_oe ]]; then
        __ic_o=0
        while IFS=$' \t\n' builtin read -r __ic_k __ic_v; do [[ $__ic_k == oom_kill ]] && __ic_o=$__ic_v; done < "$__ic_oe"
      fi
    } 2>&-
  fi
  builtin printf '\x1e%s %s %s %s %s %s %s %s\x1f%s\n' "$__ic_nonce" ${seq} ${status} "$$" "$__ic_p" "$__ic_m" "$__ic_o" "$PWD" "$__ic_nonce" >&4`;

/**
 * The bash program a {@link ShellSession} runs inside the sandbox, and its wire format.
 *
 * Host → shell on stdin: first the session's nonce on a line of its own (never in the
 * environment, so neither `env` nor /proc/<pid>/environ of any process shows it), then per
 * command a header line `<seq>:<token> <length>` and the command's text, `length` ASCII
 * characters: `\` written as `\\` and every byte outside ASCII as `\xHH`, decoded with
 * `printf %b` (so quotes of every kind pass through untouched). bash reads a line from a
 * pipe a byte per system call, a fixed count (`read -N`) in blocks: only the header goes
 * byte by byte (a byte at a time, reading would be much of the shell's CPU). ASCII keeps the count the same in every locale the command may set. The
 * command is `eval`ed in the shell itself, so cd, variables and functions persist. Its
 * stdin is /dev/null (a command that reads stdin gets EOF); the protocol reads fd 3 and
 * reports on fd 4, both closed for the command and everything it starts.
 *
 * Descriptor 4 is the control channel when the transport gives the shell one (a FIFO of its
 * own: then nothing the command prints can look like a report), else a copy of stdout
 * (markers in-band, found by the nonce).
 *
 * Hand-over: the line `@handover <base>` (no seq, never a command) makes the shell take
 * `<base>.in`, `<base>.out` and `<base>.ctl` as its descriptors 3, 1 and 4 — blocking in
 * open() until a process opens their other ends, possibly a later one than the one that
 * sent the line — then read a new nonce and write a new start-up marker: the same shell,
 * with its definitions, serves a new session (see ShellSession.handOver).
 *
 * Shell → host, after each command (and once at start with seq 0), a marker:
 * `\x1e<nonce> <seq>:<token> <status> <shellPid> <pids> <pidsMax> <oomKills> <cwd>\x1f<nonce>\n`.
 * The cgroup counters (pids, OOM kills) are read only after a command that ran 50 ms or
 * more or was killed by a signal, else reported as -1: they are cumulative, so a later
 * reading catches up, and a trivial step stays cheap. Only builtins run between
 * commands: a step costs no fork.
 */
export const SHELL_SCRIPT = String.raw`
exec 3<&0 </dev/null
{ : >&4; } 2>/dev/null || exec 4>&1
exec 2>&1
IFS= builtin read -r -u 3 __ic_nonce
cd -- "$IC_CWD" 2>/dev/null || cd /
unset IC_CWD
__ic_pc= __ic_pm= __ic_oe=
if [[ -r /sys/fs/cgroup/pids.current ]]; then
  __ic_pc=/sys/fs/cgroup/pids.current __ic_pm=/sys/fs/cgroup/pids.max __ic_oe=/sys/fs/cgroup/memory.events
elif [[ -r /sys/fs/cgroup/pids/pids.current ]]; then
  __ic_pc=/sys/fs/cgroup/pids/pids.current __ic_pm=/sys/fs/cgroup/pids/pids.max __ic_oe=/sys/fs/cgroup/memory/memory.oom_control
fi
${report('0', '0', '1')}
__ic_x=
while IFS= builtin read -r -u 3 __ic_line; do
  if [[ $__ic_line == '@handover '* ]]; then
    __ic_b=\${__ic_line#@handover }
    exec 3<"$__ic_b.in" >"$__ic_b.out" 2>&1 4>"$__ic_b.ctl" || builtin exit
    IFS= builtin read -r -u 3 __ic_nonce || builtin exit
    __ic_x=
    ${report('0', '0', '1')}
    continue
  fi
  __ic_n=\${__ic_line##* } __ic_cmd=
  case $__ic_n in ''|0|*[!0-9]*) ;; *) IFS= builtin read -r -N "$__ic_n" -u 3 __ic_cmd ;; esac
  builtin printf -v __ic_cmd '%b' "$__ic_cmd"
  __ic_t=\${EPOCHREALTIME/[.,]/}
  builtin eval "\${__ic_x:+set -x
}$__ic_cmd" 3<&- 4>&-
  { __ic_s=$? __ic_x=; [[ $- == *x* ]] && __ic_x=1; set +x; } 2>&-
  __ic_d=$(( \${EPOCHREALTIME/[.,]/}0 - \${__ic_t:-0}0 ))
  ${report('"${__ic_line%% *}"', '"$__ic_s"', '$(( __ic_s >= 128 || __ic_d >= 50000 ))')}
done
`.replaceAll('\\${', '${');

/**
 * Bash (builtins only) that sets the variable `name` to the pid of the sandbox's own idle
 * process, 0 when there is none: of the processes named {@link IDLE_PROCESS_NAME} whose
 * parent is init, the lowest-numbered. Any process can take that name (with exec -a), and an
 * orphan's parent is init too, but none of the agent's can come before the idle process,
 * which init starts first (the harness's shells come next, the agent's after them). So
 * code that spares the idle process spares it by this pid, never by its name. Uses the
 * variables `name_d`, `name_p`, `name_a`, `name_s`.
 */
export function idlePidScript(name: string): string {
  return [
    `${name}=0`,
    `for ${name}_d in /proc/[0-9]*; do`,
    `  ${name}_p=\${${name}_d#/proc/}`,
    `  (( ${name}_p > 1 && (${name} == 0 || ${name}_p < ${name}) )) || continue`,
    `  ${name}_a=; IFS= builtin read -r -d '' ${name}_a 2>/dev/null < "\$${name}_d/cmdline"`,
    `  [[ \$${name}_a == ${IDLE_PROCESS_NAME} ]] || continue`,
    `  builtin read -r ${name}_s 2>/dev/null < "\$${name}_d/stat" || continue`,
    `  ${name}_s=\${${name}_s##*) }; ${name}_s=\${${name}_s#* }`,
    `  [[ \${${name}_s%% *} == 1 ]] && ${name}=\$${name}_p`,
    'done',
  ].join('\n');
}

/**
 * Kills every process in the sandbox except init, the idle process (by its pid: see
 * {@link idlePidScript}), the processes whose pids are given as arguments, and itself.
 * Each pass first stops them all (a stopped process cannot fork, so a fork bomb cannot
 * outrun it), then kills them; passes repeat until one finds nothing. Builtins only.
 */
export const KILL_SCRIPT = String.raw`
${idlePidScript('idle')}
keep=" 1 $$ $idle $* "
victims() {
  list=()
  for d in /proc/[0-9]*; do
    p=\${d#/proc/}
    [[ $keep == *" $p "* ]] && continue
    list+=("$p")
  done
}
for pass in 1 2 3 4 5 6 7 8 9 10; do
  victims
  [[ \${#list[@]} == 0 ]] && exit 0
  kill -STOP "\${list[@]}" 2>/dev/null
  victims
  kill -KILL "\${list[@]}" 2>/dev/null
done
exit 0
`.replaceAll('\\${', '${');

const utf8 = new TextEncoder();

/**
 * Encodes a command as a header line and its text (NUL bytes cannot reach bash and are
 * dropped; see SHELL_SCRIPT for the format). The command's id is `<seq>:<token>`, echoed
 * back in its marker: a fresh random token per command means nothing can write a marker
 * for a command before it was sent.
 */
export function encodeCommand(seq: number, command: string, token = ''): string {
  const text = command
    .replace(/\0/g, '')
    .replace(/\\/g, '\\\\')
    .replace(/[^\0-\x7f]+/gu, (run) => Array.from(utf8.encode(run), (byte) => `\\x${byte.toString(16).padStart(2, '0')}`).join(''));
  return `${seq}:${token} ${text.length}\n${text}`;
}

export interface ShellMarker {
  seq: number;
  /** The command line's token (empty for the start-up marker). */
  token: string;
  status: number;
  shellPid: number;
  pids: number;
  /** NaN when the limit is "max" (unlimited) or unknown; -1 when not read this time. */
  pidsMax: number;
  /** -1 when not read this time. */
  oomKills: number;
  cwd: string;
}

/** Parses the text between `\x1e<nonce> ` and `\x1f<nonce>\n`. */
export function parseMarker(body: string): ShellMarker {
  const fields = body.split(' ');
  const [id = '', ...rest] = fields.slice(0, 6);
  // A missing field is NaN, as a field that is no number (the caller checks them: see isWellFormed).
  const [status, shellPid, pids, pidsMax, oomKills] = [0, 1, 2, 3, 4].map((i) => Number(rest[i] ?? NaN));
  const colon = id.indexOf(':');
  return {
    seq: colon < 0 ? Number(id) : Number(id.slice(0, colon)),
    token: colon < 0 ? '' : id.slice(colon + 1),
    status: status!,
    shellPid: shellPid!,
    pids: pids!,
    pidsMax: pidsMax!,
    oomKills: oomKills!,
    cwd: fields.slice(6).join(' '),
  };
}

/**
 * Whether `marker` has the fields the shell's report writes: an exit status 0–255, its pid,
 * counters that are -1 (not read) or counts (pidsMax also NaN, for "max"). A marker written
 * with the nonce but otherwise malformed was not written by the shell's own loop.
 */
export function isWellFormed(marker: ShellMarker): boolean {
  const count = (n: number) => Number.isSafeInteger(n) && n >= -1;
  return (
    Number.isSafeInteger(marker.seq) &&
    marker.seq >= 0 &&
    Number.isInteger(marker.status) &&
    marker.status >= 0 &&
    marker.status <= 255 &&
    Number.isSafeInteger(marker.shellPid) &&
    marker.shellPid > 0 &&
    count(marker.pids) &&
    (Number.isNaN(marker.pidsMax) || count(marker.pidsMax)) &&
    count(marker.oomKills)
  );
}

/** `text` as one single-quoted shell word. */
export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
