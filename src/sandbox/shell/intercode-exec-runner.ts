import { shlexSplit } from '../../compat/shlex.js';
import type { Sandbox } from '../types.js';
import { killProcesses } from './kill-processes.js';
import type { CommandEvent, CommandResult, CommandRunner, RunOptions } from './types.js';

export interface IntercodeExecOptions {
  /** The shell InterCode wrapped actions in: /bin/bash (NL2Bash images) or /bin/sh. */
  shellPath: string;
  timeoutMs: number;
  /**
   * An action that prints more than this is cut off there and killed, as after a timeout,
   * with an `output-limit` event (default 1 MiB, the session shell's kill threshold; InterCode
   * read every byte, so below it an observation is whole, as its were).
   */
  maxOutputBytes?: number;
}

/** {@link IntercodeExecOptions.maxOutputBytes} by default. */
export const INTERCODE_EXEC_OUTPUT_BYTES = 1024 * 1024;

/**
 * Runs actions the way InterCode did, to reproduce its recorded logs: one `docker exec`
 * per action of `<shell> -c "<action>"`, split like a POSIX shell by the client first (so
 * double quotes inside an action vanish), nothing persisting between actions except a
 * working directory that only `cd …` actions change (rewritten to `cd <normalised path>`).
 * Prefer {@link ShellSession} for anything but fidelity checks.
 */
export class IntercodeExecRunner implements CommandRunner {
  private workdir = '/';

  constructor(
    private readonly sandbox: Sandbox,
    private readonly options: IntercodeExecOptions,
  ) {}

  get cwd(): string {
    return this.workdir;
  }

  async run(action: string, options: RunOptions = {}): Promise<CommandResult> {
    const timeoutMs = options.timeoutMs ?? this.options.timeoutMs;
    const isCd = action.startsWith('cd');
    let command = action;
    let newPath: string | undefined;
    if (isCd) {
      const at = action.indexOf('cd ');
      // InterCode crashed here (str.index raised); treat the action as a plain command.
      if (at >= 0) {
        newPath = simplifyPath(this.workdir, action.slice(at + 3).trim());
        command = `cd ${newPath}`;
      }
    }
    const base = { exitCode: null, timedOut: false, outputBytes: 0, durationMs: 0, cwd: this.workdir, events: [] };
    let argv: string[];
    try {
      argv = shlexSplit(`${this.options.shellPath} -c "${command.trim()}"`);
    } catch {
      return { ...base, output: 'Malformed command' };
    }
    const maxOutputBytes = this.options.maxOutputBytes ?? INTERCODE_EXEC_OUTPUT_BYTES;
    const result = await this.sandbox.exec(argv, { workdir: newPath !== undefined ? '/' : this.workdir, timeoutMs, maxOutputBytes, confined: true });
    if (result.outputLimited) {
      await killProcesses(this.sandbox).catch(() => undefined);
      const output = new TextDecoder('utf-8').decode(result.output);
      const read = result.outputBytes ?? result.output.length;
      const events: CommandEvent[] = [{ kind: 'output-limit', shownBytes: result.output.length, totalBytes: read, killed: true }];
      return { ...base, output, outputBytes: read, durationMs: result.durationMs, events };
    }
    if (result.timedOut) {
      await killProcesses(this.sandbox).catch(() => undefined);
      return { ...base, timedOut: true, durationMs: result.durationMs, output: 'Command timed out' };
    }
    let output: string;
    try {
      output = new TextDecoder('utf-8', { fatal: true }).decode(result.output);
    } catch {
      return { ...base, durationMs: result.durationMs, output: 'Malformed command' };
    }
    if (newPath !== undefined && result.exitCode === 0) this.workdir = newPath;
    return {
      ...base,
      output,
      exitCode: result.exitCode,
      outputBytes: result.output.length,
      durationMs: result.durationMs,
      cwd: this.workdir,
    };
  }

  close(): void {}
}

/** InterCode's path normalisation for `cd`: joins, drops `.`, resolves `..`; no file system look-up. */
export function simplifyPath(current: string, changed: string): string {
  if (!changed) return current;
  const start = changed.startsWith('/') ? '' : current;
  const path: string[] = [];
  for (const segment of `${start}/${changed}`.split('/')) {
    if (segment === '..') path.pop();
    else if (segment && segment !== '.') path.push(segment);
  }
  return `/${path.join('/')}`;
}
