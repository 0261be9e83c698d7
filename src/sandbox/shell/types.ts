/** Something that happened while a command ran, besides its output. */
export type CommandEvent =
  | { kind: 'timed-out'; afterMs: number }
  /** Stopped on request (RunOptions.signal) before it ended. */
  | { kind: 'interrupted'; afterMs: number }
  | { kind: 'output-limit'; shownBytes: number; totalBytes: number; killed: boolean }
  | { kind: 'shell-restarted'; reason: 'exited' | 'killed' | 'found-dead'; cwd: string }
  | { kind: 'out-of-memory'; kills: number }
  | { kind: 'process-limit'; limit: number }
  /** The shell's end-of-command report was forged or disturbed: the episode cannot be trusted. */
  | { kind: 'protocol-violation'; detail: string }
  /** The sandbox's writable layer went past its disk limit: the command was killed; the episode ends. */
  | { kind: 'disk-limit'; usedBytes: number; limitBytes: number };

/** What one command did. A failed command is a result, never an exception. */
export interface CommandResult {
  /** Merged stdout/stderr, decoded as UTF-8 (invalid bytes become U+FFFD), capped. */
  output: string;
  /** Exit status; null when the command was killed before it reported one. */
  exitCode: number | null;
  timedOut: boolean;
  /** Bytes the command wrote, including any not kept because of the cap. */
  outputBytes: number;
  durationMs: number;
  /** Working directory after the command. */
  cwd: string;
  events: CommandEvent[];
}

export interface RunOptions {
  timeoutMs?: number;
  /**
   * Aborting it stops the command as its time limit would, at once (a person's Ctrl-C): what it
   * started is killed, its output so far is kept, and the session goes on. Runners that cannot
   * stop a command early ignore it (the command then ends at its time limit).
   */
  signal?: AbortSignal;
}

/** Runs commands in a sandbox, one at a time. */
export interface CommandRunner {
  run(command: string, options?: RunOptions): Promise<CommandResult>;
  /** Working directory the next command starts in. */
  readonly cwd: string;
  close(): void;
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;

function describeEvent(event: CommandEvent): string {
  switch (event.kind) {
    case 'timed-out':
      return `command timed out after ${event.afterMs / 1000} s and was killed; output so far is shown`;
    case 'interrupted':
      return `command interrupted after ${(event.afterMs / 1000).toFixed(1)} s and killed; output so far is shown`;
    case 'output-limit':
      return `output truncated: showing the first ${event.shownBytes} of ${event.totalBytes} bytes` +
        (event.killed ? '; the command was killed for writing too much' : '');
    case 'shell-restarted':
      return `the shell ${event.reason === 'exited' ? 'exited' : event.reason === 'killed' ? 'had to be killed' : 'was gone'}; ` +
        `a new shell was started in ${event.cwd} (variables and functions were lost)`;
    case 'out-of-memory':
      return `${event.kills} process(es) killed: out of memory (the sandbox's memory limit)`;
    case 'process-limit':
      return `process limit reached (${event.limit}); all background processes were killed`;
    case 'disk-limit':
      return `disk limit reached: the sandbox's files take ${mib(event.usedBytes)} of ${mib(event.limitBytes)} allowed; the command was killed and the episode ends`;
    case 'protocol-violation':
      return `protocol violation: ${event.detail}; the output is withheld, every process was killed and the episode ends`;
  }
}

/** The observation an agent sees: the output, then one note line per event. */
export function renderObservation(result: CommandResult): string {
  if (result.events.length === 0) return result.output;
  const notes = result.events.map((e) => `[intercode: ${describeEvent(e)}]`).join('\n');
  const sep = result.output === '' || result.output.endsWith('\n') ? '' : '\n';
  return `${result.output}${sep}${notes}`;
}
