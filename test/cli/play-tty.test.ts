/**
 * `intercode play` as a person uses it, on a real pseudo-terminal (tmux): Ctrl-C stops a
 * running action and the session goes on (before: nothing happened, and after the action's
 * time limit the prompt printed nothing more until Ctrl-D); Ctrl-C at an empty prompt asks and
 * a second one quits with 130 (before: the first quit, exit 0); task indices past the dataset
 * are refused with its range (before: `:task 99` and `--task 999` opened task 9).
 * The range and Ctrl-C at the prompt run on the SQL env's embedded backend (no Docker); the
 * interrupted action is a bash sleep in a real sandbox.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandExists } from '../../src/setup/host-facts.js';
import { intercodeFromSource } from '../setup/cli.js';
import { dockerTestFile, IN_CI, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { TmuxTerminal } from '../newcomer/tmux.js';

const { engine } = await dockerTestFile();
const CLI = join(import.meta.dirname, '../../bin/intercode.js');
const dir = mkdtempSync(join(tmpdir(), 'ic-play-tty-'));
const haveTmux = commandExists('tmux');
let terminal: TmuxTerminal;

beforeAll(() => {
  if (!haveTmux) throw new Error('tmux is not installed: npx intercode setup --with-test-tools (or apt-get install tmux)');
  terminal = new TmuxTerminal(dir);
});
afterAll(() => {
  terminal?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('play: task indices', () => {
  it('--task past the dataset is a usage error naming the range (exit 2)', async () => {
    const run = await intercodeFromSource(['play', 'sql', '--embedded', '--task', '999']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--task.*there is no task 999: this dataset's tasks are 0 to \d+/);
    expect(run.stdout).not.toContain('── task');
  }, 60_000);
});

describe.skipIf(!haveTmux && !IN_CI)('play on a terminal', () => {
  it(':task past the dataset is refused with the range; Ctrl-C clears a typed line; at an empty prompt it asks, and twice quits with 130', async () => {
    const play = terminal.start('sql', `node ${CLI} play sql --embedded`);
    await play.waitFor(/── task 0 of (\d+) ──[\s\S]*\$ $/m, 60_000);
    const count = Number(/── task 0 of (\d+)/.exec(play.screen())![1]);
    play.type(':task 99');
    play.press('Enter');
    await play.waitFor(new RegExp(`there is no task 99: this dataset's tasks are 0 to ${count - 1}`), 10_000);
    expect(play.screen()).not.toContain('── task 9 of');
    play.type(':task 2');
    play.press('Enter');
    await play.waitFor(/── task 2 of/, 10_000);
    // A typed line, then Ctrl-C: the line is dropped, the session goes on.
    play.type('SELECT 1 AS never_run');
    play.press('C-c');
    play.type('SELECT 6 * 7 AS answer');
    play.press('Enter');
    await play.waitFor(/\(42,\)/, 10_000);
    expect(play.screen()).not.toContain('never_run,');
    play.press('C-c');
    await play.waitFor(/Ctrl-C again or Ctrl-D to quit/, 10_000);
    play.press('C-c');
    expect(await play.exit(20_000)).toBe(130);
  }, 120_000);

  describe.skipIf(skipWithoutEngine(engine, 'play: Ctrl-C during a bash action'))('in a bash sandbox', () => {
    beforeAll(() => void requireEngine(engine));

    it('Ctrl-C stops a running action at once, as its time limit would (its processes killed, its output shown); the next action runs; Ctrl-D quits with 0', async () => {
      const play = terminal.start('bash', `node ${CLI} play bash`);
      await play.waitFor(/── task 0 of[\s\S]*\$ $/m, 120_000);
      play.type('echo started-$((2+3)); sleep 60; echo never-printed');
      play.press('Enter');
      // An action's output is shown when it ends: Ctrl-C once the sleep runs (the time limit is 10 s).
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      play.press('C-c');
      const interrupted = await play.waitFor(/command interrupted after ([\d.]+) s and killed/, 8_000);
      expect(Number(/command interrupted after ([\d.]+) s/.exec(interrupted)![1])).toBeLessThan(8);
      expect(interrupted).toMatch(/started-5[\s\S]*command interrupted/);
      play.type("echo alive-$((6*7)) left=$(pgrep -fc 'sleep 60')");
      play.press('Enter');
      const screen = await play.waitFor(/alive-42 left=0\s*\n/, 20_000);
      // As at its time limit, what the action started is killed and its shell goes on (with
      // the rest of its line: `never-printed` is printed), its variables and directory kept.
      expect(screen).toMatch(/Killed\s+sleep 60\s*\n\s*never-printed/);
      play.press('C-d');
      expect(await play.exit(60_000)).toBe(0);
    }, 240_000);
  });
});
