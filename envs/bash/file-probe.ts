import { CONTROL_SHELL } from '../../src/pool/workspace-factory.js';
import { SandboxError } from '../../src/errors.js';
import { ShellSession } from '../../src/sandbox/shell/shell-session.js';
import type { CommandResult, CommandRunner } from '../../src/sandbox/shell/types.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import { parseGitStatus, type FileChange } from './reward.js';
import { idlePidScript, shellQuote } from '../../src/sandbox/shell/shell-script.js';
import { randomHex } from '../../src/sandbox/shell/random-hex.js';

/**
 * Git settings every probe forces, whatever the repository, the system or a user says: no
 * ignore or attributes file of a user's (git reads `~/.config/git/ignore` even with no global
 * configuration), no hooks, no file-system monitor, no untracked-file cache kept in the index
 * (an agent could write one that lists nothing), untracked files listed as by default.
 */
const GIT_SETTINGS = [
  'core.excludesFile=/dev/null',
  'core.attributesFile=/dev/null',
  'core.hooksPath=/dev/null',
  'core.fsmonitor=false',
  'core.untrackedCache=false',
  'status.showUntrackedFiles=normal',
].map((setting) => `-c ${setting}`).join(' ');

/**
 * How the probe's commands start: in a subshell (the control shell's own state is kept)
 * with a clean environment — PATH only /usr/bin (not /usr/local, /usr/sbin or /sbin, where
 * an agent could put a `git` or an `md5sum` of its own ahead of the image's), no HOME or
 * XDG folder, the C locale, no GIT_ variable, git reading no system, global or user
 * configuration (see {@link GIT_SETTINGS}; the images have no /etc/gitconfig or
 * /etc/gitattributes) — then a line of their own, `\x02<frame>`, a random word sent with
 * the command: the probe's output is what follows it, so bytes that another process wrote
 * into the shell's output before (see {@link FileProbe.whileAlone}) are never read as the
 * probe's. Builtins only up to the probe's own programs. What an agent could still change
 * — the programs themselves, the libraries and the loader's configuration, the repository —
 * is checked from outside before scoring, where the runtime can (see {@link isScorerInstrument}).
 */
const probe = (command: string, frame: string) =>
  `( builtin unset -v HOME LANG LANGUAGE \${!GIT_*} \${!XDG_*} \${!LC_*}; builtin export PATH=/usr/bin LC_ALL=C GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_ATTR_NOSYSTEM=1; builtin cd / && builtin printf '\\002%s\\n' ${frame} && ${command} )`;

/** `git` with the probe's {@link GIT_SETTINGS}. */
const git = (command: string) => `git --no-optional-locks ${GIT_SETTINGS} ${command}`;

/** How long {@link stopOthers} keeps stopping processes that still run. */
const STOP_SECONDS = 5;

/**
 * Stops (SIGSTOP) every process in the sandbox but init, the idle process (by its pid: an
 * agent's process may take its name, see idlePidScript), the shell that runs it, its own
 * subshell and the processes `keep`, pass after pass until one finds none running (a process
 * forked meanwhile is stopped by the next pass; a stopped one cannot fork; one signalled but
 * not yet scheduled is signalled again), and prints the ones it stopped: those already
 * stopped (by the agent) are not its to continue. Exits 1 when processes still run after
 * {@link STOP_SECONDS} s (a loaded host can take long to schedule a stopped process). Builtins
 * only; run as a probe, in the scorer shell's subshell ($BASHPID), whose own subshells it would stop.
 */
const stopOthers = (keep: readonly number[] = []) => String.raw`
${idlePidScript('idle')}
keep=" 1 $$ $BASHPID $idle ${keep.join(' ')} " stopped=" "
ends=$(( \${EPOCHREALTIME/[.,]/} + ${STOP_SECONDS} * 1000000 ))
while :; do
  running=0
  for d in /proc/[0-9]*; do
    p=\${d#/proc/}
    [[ $keep == *" $p "* ]] && continue
    stat=
    IFS= builtin read -r stat 2>/dev/null < "$d/stat" || continue
    stat=\${stat##*) }
    case \${stat%% *} in T|t|Z|X|'') continue ;; esac
    builtin kill -STOP "$p" 2>/dev/null || continue
    [[ $stopped == *" $p "* ]] || stopped+="$p "
    running=1
  done
  [[ $running == 0 ]] && { builtin printf 'stopped%s\n' "\${stopped% }"; builtin exit 0; }
  (( \${EPOCHREALTIME/[.,]/} < ends )) || break
done
builtin printf 'running%s\n' "\${stopped% }"
builtin exit 1`.replaceAll('\\${', '${');

/** Git's index: rewritten by an agent's own `git status`, so checked apart (see {@link FileProbe.requirePlainIndex}). */
export const GIT_INDEX = '/.git/index';

/**
 * What the probe runs or reads besides the files it lists: the repository, git and the
 * programs of the sums, the libraries and the dynamic loader's configuration (git's system
 * configuration and attributes are not read: see {@link probe}). An episode that changed any of them could make `git status`
 * or `md5sum` say what it likes (a `git` that prints nothing, a commit that makes every
 * change part of the repository, `update-index --assume-unchanged`, an `/etc/ld.so.preload`).
 */
const INSTRUMENTS = [
  '/.git',
  '/usr/bin/git',
  '/usr/lib/git-core',
  '/usr/share/git-core',
  '/usr/bin/md5sum',
  '/usr/bin/find',
  '/usr/bin/sort',
  '/usr/bin/xargs',
  '/etc/ld.so.preload',
  '/etc/ld.so.cache',
  '/etc/ld.so.conf',
  '/etc/ld.so.conf.d',
  '/usr/lib/x86_64-linux-gnu',
  '/usr/lib/aarch64-linux-gnu',
  '/usr/lib64',
  '/lib64',
];

/**
 * The programs the harness runs, by name, to start its shells and the agent's, and its kill
 * script (src/sandbox/harness-capability.ts): one of the agent's anywhere in the search path
 * (`/usr/local/bin/bash`, a `setpriv` that keeps the harness's capability) would run with the
 * harness's capability, as the harness's next control shell, say.
 */
const SHELL_STARTERS = new Set(['bash', 'sh', 'dash', 'setpriv']);

/** Where those names are looked up (the images' PATH). */
const SEARCH_PATH = new Set(['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin']);

/**
 * Whether a change at `path` (absolute) touches what the probe relies on, an ignore or
 * attributes file anywhere included. Not /.git/index, which an agent's own `git status`
 * rewrites (refreshed stat data; see {@link FileProbe.requirePlainIndex}), nor the /.git
 * folder itself, whose times that rewrite changes (what is added or removed in it is listed apart).
 */
export function isScorerInstrument(path: string): boolean {
  if (path === GIT_INDEX || path === '/.git') return false;
  const name = path.slice(path.lastIndexOf('/') + 1);
  if (name === '.gitignore' || name === '.gitattributes') return true;
  if (SHELL_STARTERS.has(name) && SEARCH_PATH.has(path.slice(0, path.lastIndexOf('/')))) return true;
  return INSTRUMENTS.some((instrument) => path === instrument || path.startsWith(`${instrument}/`));
}

/** How the contents of a changed path are compared. */
export type HashMode =
  /** As InterCode: md5sum for paths with a "." in the name; other paths always agree (its md5deep was not installed). */
  | 'intercode'
  /** Stricter: md5 of every file below a directory, so directories are really compared. */
  | 'strict';


/**
 * Reads what an episode changed in a sandbox whose root is a git repository (as the bash
 * images make it): `git status --short` and md5 sums, through a shell of its own that the
 * agent's commands never touch (or, where an agent's process could read that shell's
 * descriptors, by execs of their own: see {@link FileProbe.whileAlone}).
 */
export class FileProbe {
  /**
   * @param shell a shell the agent never touches (an episode's control shell).
   * @param outside where that shell's commands could be read by an agent's process: its
   *   sandbox and pid, for every command of the probe to run by an exec of its own instead
   *   (see {@link whileAlone}).
   */
  constructor(
    private readonly shell: CommandRunner,
    private readonly outside?: { sandbox: Sandbox; shellPid: number },
  ) {}

  /** A probe through `control`, the harness's shell in `sandbox`. */
  static of(control: ShellSession, sandbox: Sandbox): FileProbe {
    return new FileProbe(control, sandbox.harnessDescriptorsExposed ? { sandbox, shellPid: control.pid } : undefined);
  }

  /** A probe with a shell of its own (the caller closes it). */
  static async open(sandbox: Sandbox): Promise<FileProbe> {
    return FileProbe.of(await ShellSession.open(sandbox, CONTROL_SHELL), sandbox);
  }

  /** What git lists in `sandbox`, read through a shell of its own. */
  static async changesIn(sandbox: Sandbox): Promise<FileChange[]> {
    const probe = await FileProbe.open(sandbox);
    try {
      return await probe.changes();
    } finally {
      probe.close();
    }
  }

  /** @throws SandboxError STATE_UNREADABLE when `git status` does not come back whole. */
  async changes(): Promise<FileChange[]> {
    return parseGitStatus(await this.read('git status', git('status --short')));
  }

  /**
   * Checks that the index marks no file assume-unchanged or skip-worktree, which would hide
   * its changes from `git status` (`git ls-files -v` tags such files otherwise than `H`).
   * For an index the episode rewrote, once git and what it loads are known to be the image's.
   * @throws SandboxError STATE_UNREADABLE when one is marked, or the listing does not come back whole.
   */
  async requirePlainIndex(): Promise<void> {
    const marked = (await this.read('git ls-files', git('ls-files -v'))).split('\n').filter((line) => line !== '' && !line.startsWith('H '));
    if (marked.length > 0) {
      throw new SandboxError('STATE_UNREADABLE', `the index marks ${marked.length} file(s) so that git status passes over them (${marked[0]})`, { details: { marked: marked.slice(0, 20) } });
    }
  }

  /** @throws SandboxError STATE_UNREADABLE when a sum does not come back whole. */
  async hashes(paths: Iterable<string>, mode: HashMode): Promise<Map<string, string>> {
    const hashes = new Map<string, string>();
    for (const path of paths) {
      if (mode === 'intercode' && !path.includes('.')) {
        hashes.set(path, 'md5deep: command not found');
        continue;
      }
      const p = shellQuote(path);
      const command =
        mode === 'strict'
          ? `if [ -d ${p} ]; then cd ${p} && find . -type f -print0 | sort -z | xargs -0r md5sum; else md5sum ${p}; fi 2>&1`
          : `md5sum ${p} 2>&1`;
      hashes.set(path, await this.read(`the sums of ${path}`, command));
    }
    return hashes;
  }

  /**
   * The output of `command`, which ran to its end (its exit status is part of what InterCode
   * compared: `git status` outside a repository prints an error, and that is scored). A
   * listing cut short by the time limit or the output cap is not scored as if whole: an agent
   * could otherwise hide its changes behind, say, more untracked files than the cap holds.
   */
  private async read(what: string, command: string): Promise<string> {
    return (await this.run(what, command)).output;
  }

  /**
   * Runs `read` with every other process in the sandbox stopped (see {@link stopOthers}),
   * then continues the ones it stopped: no process an agent left running can change the
   * files, write into the probe's output (through /proc/<pid>/fd of the scorer's shell, say)
   * or reach its processes while the probe reads. Where an agent's process could read the
   * shell's commands (Sandbox.harnessDescriptorsExposed), and so take the stop pass, or a
   * read after it, for its own before the shell reads it, every command of the probe (the
   * stop pass, the reads, the continue) runs by an exec of its own, sparing the shell: under
   * gVisor a `cat` of the shell's /proc/<pid>/fd/3 still took `git status` after the stop
   * pass had found it stopped (seen in the hostile suite under runsc).
   * @throws SandboxError STATE_UNREADABLE when some process could not be stopped.
   */
  async whileAlone<T>(read: () => Promise<T>): Promise<T> {
    const what = 'stopping the other processes';
    const { output, exitCode } = this.outside
      ? await this.runOutside(this.outside.sandbox, what, stopOthers([this.outside.shellPid]))
      : await this.run(what, stopOthers());
    const stopped = output.trim().split(' ').slice(1).filter((pid) => /^\d+$/.test(pid));
    try {
      if (exitCode !== 0) throw new SandboxError('STATE_UNREADABLE', `processes of the sandbox kept running after ${STOP_SECONDS} s of SIGSTOP`, { details: { output: output.slice(0, 2000) } });
      return await read();
    } finally {
      const resume = `builtin kill -CONT ${stopped.join(' ')} 2>/dev/null; :`;
      if (stopped.length > 0) await (this.outside ? this.outside.sandbox.exec(['bash', '--noprofile', '--norc', '-c', resume], { timeoutMs: CONTROL_SHELL.timeoutMs }) : this.shell.run(resume));
    }
  }

  close(): void {
    this.shell.close();
  }

  /**
   * `command` run as a probe (see {@link probe}): its exit status, and its output after the
   * frame line (what came before it was written by another process).
   * @throws SandboxError STATE_UNREADABLE when the output is not whole, or has no frame line.
   */
  private async run(what: string, command: string): Promise<{ output: string; exitCode: number | null }> {
    if (this.outside) return this.runOutside(this.outside.sandbox, what, command);
    const frame = randomHex(16);
    const result = await this.shell.run(probe(command, frame));
    const why = incomplete(result);
    if (why) throw new SandboxError('STATE_UNREADABLE', `${what} ${why}`, { details: { command, events: result.events } });
    return framed(what, command, frame, result);
  }

  /**
   * `command` run as a probe by an exec of its own (the engine starts it, with the harness's
   * capability), in the shell's place: nothing it is sent passes through a pipe in the sandbox.
   * @throws SandboxError STATE_UNREADABLE as {@link run}.
   */
  private async runOutside(sandbox: Sandbox, what: string, command: string): Promise<{ output: string; exitCode: number | null }> {
    const frame = randomHex(16);
    const result = await sandbox.exec(['bash', '--noprofile', '--norc', '-c', probe(command, frame)], { timeoutMs: CONTROL_SHELL.timeoutMs, maxOutputBytes: CONTROL_SHELL.maxOutputBytes });
    if (result.timedOut || result.outputLimited || result.exitCode === null) {
      const why = result.timedOut ? 'timed out' : result.outputLimited ? `printed more than the scorer's shell keeps (${CONTROL_SHELL.maxOutputBytes} bytes kept)` : 'did not finish';
      throw new SandboxError('STATE_UNREADABLE', `${what} ${why}`, { details: { command } });
    }
    return framed(what, command, frame, { output: result.output.toString('utf8'), exitCode: result.exitCode });
  }
}

/**
 * A probe's output after its frame line (what came before it was written by another
 * process), and its exit status.
 * @throws SandboxError STATE_UNREADABLE when it has no frame line.
 */
function framed(what: string, command: string, frame: string, result: { output: string; exitCode: number | null }): { output: string; exitCode: number | null } {
  const line = `\x02${frame}\n`;
  const start = result.output.indexOf(line);
  if (start < 0) throw new SandboxError('STATE_UNREADABLE', `${what} did not start (no frame line in its output)`, { details: { command, output: result.output.slice(0, 2000) } });
  return { output: result.output.slice(start + line.length), exitCode: result.exitCode };
}

/** Why a probe's output is not the whole of it, if it is not. */
function incomplete(result: CommandResult): string | undefined {
  if (result.timedOut) return 'timed out';
  const cut = result.events.find((event) => event.kind === 'output-limit');
  if (cut) return `printed more than the scorer's shell keeps (${cut.totalBytes} bytes, ${cut.shownBytes} kept)`;
  if (result.exitCode === null) return 'did not finish (its shell was restarted)';
  return undefined;
}
