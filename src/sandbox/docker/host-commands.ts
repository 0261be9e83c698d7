import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

/** How a host command ended: its exit status (null when it never ran or ran past its limit) and the start of what it printed. */
export interface HostCommandResult {
  status: number | null;
  output: string;
}

/**
 * The helper: reads requests (an id, an argument count, then the arguments, each ended by
 * a NUL byte) and runs each command in the background, stdin from /dev/null, answering one
 * line per command — its id, its exit status and up to 400 bytes of its merged output with
 * newlines flattened — in one write, so lines of commands running at once never mix. It
 * ends at the end of its input: when this process closes it, exits or dies.
 */
const HELPER_SCRIPT = `
while IFS= read -r -d '' id && IFS= read -r -d '' n; do
  args=()
  while (( n-- > 0 )); do IFS= read -r -d '' a || exit 0; args+=("$a"); done
  { out=$("\${args[@]}" 2>&1 </dev/null); s=$?; out=\${out//$'\\n'/ }; printf '%s %d %s\\n' "$id" "$s" "\${out:0:400}"; } &
done
`;

/**
 * Runs short host commands (`nsenter` to pin a sandbox's next process id, `mkfifo` for its
 * channels: a few per episode) through one long-lived helper shell instead of one child of
 * this process each. Starting a child from Node forks the whole Node process, on this
 * thread, during which no env of the event loop moves (docs/performance.md, "Figures behind
 * the code"); the helper is a small bash that forks in a fraction of that, off this thread. The helper is
 * started on first use, does not keep this process alive, and ends with it; one that dies
 * is started again by the next command.
 */
export class HostCommands {
  private helper: ChildProcessByStdio<Writable, Readable, null> | undefined;
  private readonly pending = new Map<number, (result: HostCommandResult) => void>();
  private nextId = 1;
  private buffered = '';

  /**
   * Runs `argv` on the host. Resolves with status null when the helper cannot start or dies,
   * or after `timeoutMs` without an answer (the command is then left to finish on its own).
   */
  run(argv: readonly string[], timeoutMs = 10_000): Promise<HostCommandResult> {
    if (argv.length === 0 || argv.some((a) => a.includes('\0'))) throw new RangeError('a host command is a non-empty argument list without NUL bytes');
    const helper = this.started();
    if (!helper) return Promise.resolve({ status: null, output: 'the host command helper could not start' });
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => settle({ status: null, output: `no answer within ${timeoutMs} ms` }), timeoutMs);
      const settle = (result: HostCommandResult) => {
        clearTimeout(timer);
        if (this.pending.delete(id)) resolve(result);
      };
      this.pending.set(id, settle);
      helper.stdin.write(`${id}\0${argv.length}\0${argv.join('\0')}\0`);
    });
  }

  private started(): ChildProcessByStdio<Writable, Readable, null> | undefined {
    if (this.helper) return this.helper;
    let helper: ChildProcessByStdio<Writable, Readable, null>;
    try {
      helper = spawn('/bin/bash', ['--noprofile', '--norc', '-c', HELPER_SCRIPT], { stdio: ['pipe', 'pipe', 'ignore'] });
    } catch {
      return undefined;
    }
    const ended = () => {
      if (this.helper !== helper) return;
      this.helper = undefined;
      this.buffered = '';
      for (const settle of [...this.pending.values()]) settle({ status: null, output: 'the host command helper ended' });
    };
    helper.on('error', ended);
    helper.on('exit', ended);
    helper.stdin.on('error', ended);
    helper.stdout.setEncoding('utf8');
    helper.stdout.on('data', (chunk: string) => this.answered(chunk));
    helper.unref();
    (helper.stdin as Writable & { unref?: () => void }).unref?.();
    (helper.stdout as Readable & { unref?: () => void }).unref?.();
    this.helper = helper;
    return helper;
  }

  private answered(chunk: string): void {
    this.buffered += chunk;
    let newline: number;
    while ((newline = this.buffered.indexOf('\n')) >= 0) {
      const line = this.buffered.slice(0, newline);
      this.buffered = this.buffered.slice(newline + 1);
      const match = /^(\d+) (\d+) ?(.*)$/.exec(line);
      if (match) this.pending.get(Number(match[1]))?.({ status: Number(match[2]), output: match[3]! });
    }
  }
}

/** This thread's helper (a worker thread has its own). */
export const hostCommands = new HostCommands();
