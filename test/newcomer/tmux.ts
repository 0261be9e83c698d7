/**
 * A real pseudo-terminal for tests: one command in a detached tmux session on a tmux
 * server of the test's own (`-L`), its raw output recorded with pipe-pane before the
 * command starts, its final screen read with capture-pane. `close()` ends that server only.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

export class TmuxTerminal {
  private readonly server = `ic-tty-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;

  constructor(private readonly dir: string) {}

  private tmux(...args: string[]): string {
    const run = spawnSync('tmux', ['-L', this.server, ...args], { encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`tmux ${args[0]} failed: ${run.stderr.trim()}`);
    return run.stdout;
  }

  /**
   * Runs `command` (a shell command line) in a `width`×`height` terminal until it exits.
   * @returns its exit status, the raw bytes it wrote to the terminal and the final screen.
   */
  async run(name: string, command: string, timeoutMs = 120_000, width = 200, height = 50): Promise<{ status: number; raw: string; screen: string }> {
    const raw = join(this.dir, `${name}.raw`);
    const marker = '__IC_EXIT=';
    const script = `tmux -L ${this.server} wait-for go; ${command}; echo ${marker}$?; sleep 600`;
    this.tmux('new-session', '-d', '-s', name, '-x', String(width), '-y', String(height), script);
    this.tmux('pipe-pane', '-t', name, '-o', `cat >> ${raw}`);
    this.tmux('wait-for', '-S', 'go');
    const deadline = Date.now() + timeoutMs;
    let screen = '';
    while (Date.now() < deadline) {
      screen = this.tmux('capture-pane', '-p', '-t', name, '-S', '-200');
      const exit = new RegExp(`${marker}(\\d+)`).exec(screen);
      if (exit) {
        this.tmux('kill-session', '-t', name);
        return { status: Number(exit[1]), raw: existsSync(raw) ? readFileSync(raw, 'utf8') : '', screen: screen.replace(new RegExp(`${marker}\\d+\\s*$`), '').trimEnd() };
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`${name} did not finish within ${timeoutMs} ms; screen:\n${screen}`);
  }

  /**
   * Starts `command` in a `width`×`height` terminal and returns a handle to type into it
   * (tmux send-keys), wait for text on its screen, and wait for its exit status.
   */
  start(name: string, command: string, width = 160, height = 50): InteractiveTerminal {
    const marker = '__IC_EXIT=';
    this.tmux('new-session', '-d', '-s', name, '-x', String(width), '-y', String(height), `${command}; echo ${marker}$?; sleep 600`);
    const screen = () => this.tmux('capture-pane', '-p', '-J', '-t', name, '-S', '-500');
    const waitFor = async (pattern: RegExp, timeoutMs: number): Promise<string> => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const text = screen();
        if (pattern.test(text)) return text;
        if (Date.now() > deadline) throw new Error(`${name}: ${pattern} did not appear within ${timeoutMs} ms; screen:\n${text}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    return {
      type: (text) => void this.tmux('send-keys', '-t', name, '-l', text),
      press: (...keys) => void this.tmux('send-keys', '-t', name, ...keys),
      screen,
      waitFor,
      exit: async (timeoutMs) => {
        const text = await waitFor(new RegExp(`${marker}\\d+`), timeoutMs);
        this.tmux('kill-session', '-t', name);
        return Number(new RegExp(`${marker}(\\d+)`).exec(text)![1]);
      },
    };
  }

  /** Ends this server and removes its socket file (kill-server leaves it). */
  close(): void {
    spawnSync('tmux', ['-L', this.server, 'kill-server']);
    rmSync(join(process.env.TMUX_TMPDIR ?? '/tmp', `tmux-${process.getuid?.() ?? 0}`, this.server), { force: true });
  }
}

/** A command running in a {@link TmuxTerminal}, typed into by the test. */
export interface InteractiveTerminal {
  /** Types `text` literally (no key names). */
  type(text: string): void;
  /** Presses keys by tmux's names: `Enter`, `C-c`, `C-d`. */
  press(...keys: string[]): void;
  /** The screen and its history, wrapped lines joined. */
  screen(): string;
  /** Resolves with the screen once `pattern` matches it; throws after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs: number): Promise<string>;
  /** The command's exit status, once it has exited (within `timeoutMs`). */
  exit(timeoutMs: number): Promise<number>;
}
