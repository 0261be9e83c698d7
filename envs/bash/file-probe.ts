import { CONTROL_SHELL } from '../../src/env/sandbox-env.js';
import { SandboxError } from '../../src/errors.js';
import { ShellSession } from '../../src/sandbox/shell/shell-session.js';
import type { CommandResult, CommandRunner } from '../../src/sandbox/shell/types.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import { parseGitStatus, type FileChange } from './reward.js';
import { shellQuote } from '../../src/sandbox/shell/shell-script.js';

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
    return parseGitStatus(await this.read('git status', 'cd / && git --no-optional-locks status --short'));
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
          ? `cd / && if [ -d ${p} ]; then cd ${p} && find . -type f -print0 | sort -z | xargs -0r md5sum; else md5sum ${p}; fi 2>&1`
          : `cd / && md5sum ${p} 2>&1`;
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
