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

  /** Ends this server and removes its socket file (kill-server leaves it). */
  close(): void {
    spawnSync('tmux', ['-L', this.server, 'kill-server']);
    rmSync(join(process.env.TMUX_TMPDIR ?? '/tmp', `tmux-${process.getuid?.() ?? 0}`, this.server), { force: true });
  }
}
