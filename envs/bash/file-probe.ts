import { CONTROL_SHELL } from '../../src/env/sandbox-env.js';
import { SandboxError } from '../../src/errors.js';
import { ShellSession } from '../../src/sandbox/shell/shell-session.js';
import type { CommandResult, CommandRunner } from '../../src/sandbox/shell/types.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import { parseGitStatus, type FileChange } from './reward.js';
import { shellQuote } from '../../src/sandbox/shell/shell-script.js';

/**
 * How the probe's commands start: in a subshell (the control shell's own state is kept)
 * whose PATH has no /usr/local, where an agent could put a `git` or an `md5sum` of its own
 * ahead of the image's; git reads no user configuration (an agent's `status.showUntrackedFiles
 * no` in /root/.gitconfig would hide its files). What an agent could still change — the
 * programs themselves, the libraries and the loader's configuration, the repository — is
 * checked from outside before scoring (see {@link isScorerInstrument}).
 */
const probe = (command: string) => `( PATH=/usr/sbin:/usr/bin:/sbin:/bin GIT_CONFIG_GLOBAL=/dev/null; export GIT_CONFIG_GLOBAL; cd / && ${command} )`;

/** Git's index: rewritten by an agent's own `git status`, so checked apart (see {@link FileProbe.requirePlainIndex}). */
export const GIT_INDEX = '/.git/index';

/**
 * What the probe runs or reads besides the files it lists: the repository, git and the
 * programs of the sums, the libraries and the dynamic loader's configuration, git's system
 * configuration and attributes. An episode that changed any of them could make `git status`
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
  '/etc/gitconfig',
  '/etc/gitattributes',
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
 * Whether a change at `path` (absolute) touches what the probe relies on, an ignore or
 * attributes file anywhere included. Not /.git/index, which an agent's own `git status`
 * rewrites (refreshed stat data; see {@link FileProbe.requirePlainIndex}), nor the /.git
 * folder itself, whose times that rewrite changes (what is added or removed in it is listed apart).
 */
export function isScorerInstrument(path: string): boolean {
  if (path === GIT_INDEX || path === '/.git') return false;
  const name = path.slice(path.lastIndexOf('/') + 1);
  if (name === '.gitignore' || name === '.gitattributes') return true;
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
 * agent's commands never touch.
 */
export class FileProbe {
  /** @param shell a shell the agent never touches (an episode's control shell). */
  constructor(private readonly shell: CommandRunner) {}

  /** A probe with a shell of its own (the caller closes it). */
  static async open(sandbox: Sandbox): Promise<FileProbe> {
    return new FileProbe(await ShellSession.open(sandbox, CONTROL_SHELL));
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
    return parseGitStatus(await this.read('git status', probe('git --no-optional-locks status --short')));
  }

  /**
   * Checks that the index marks no file assume-unchanged or skip-worktree, which would hide
   * its changes from `git status` (`git ls-files -v` tags such files otherwise than `H`).
   * For an index the episode rewrote, once git and what it loads are known to be the image's.
   * @throws SandboxError STATE_UNREADABLE when one is marked, or the listing does not come back whole.
   */
  async requirePlainIndex(): Promise<void> {
    const marked = (await this.read('git ls-files', probe('git ls-files -v'))).split('\n').filter((line) => line !== '' && !line.startsWith('H '));
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
          ? probe(`if [ -d ${p} ]; then cd ${p} && find . -type f -print0 | sort -z | xargs -0r md5sum; else md5sum ${p}; fi 2>&1`)
          : probe(`md5sum ${p} 2>&1`);
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
    const result = await this.shell.run(command);
    const why = incomplete(result);
    if (why) throw new SandboxError('STATE_UNREADABLE', `${what} ${why}`, { details: { command, events: result.events } });
    return result.output;
  }

  close(): void {
    this.shell.close();
  }
}

/** Why a probe's output is not the whole of it, if it is not. */
function incomplete(result: CommandResult): string | undefined {
  if (result.timedOut) return 'timed out';
  const cut = result.events.find((event) => event.kind === 'output-limit');
  if (cut) return `printed more than the scorer's shell keeps (${cut.totalBytes} bytes, ${cut.shownBytes} kept)`;
  if (result.exitCode === null) return 'did not finish (its shell was restarted)';
  return undefined;
}
