/**
 * HostCommands: short host commands (nsenter, mkfifo) run through one long-lived helper
 * shell instead of a fork of this Node process each. Each answer must reach the command
 * that asked (commands run at once answer out of order), a command past its limit must not
 * hang its caller, a dead helper must not lose a caller nor stop later commands, and the
 * helper must neither keep this process alive nor outlive it.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HostCommands } from '../../src/sandbox/docker/host-commands.js';

const commands = new HostCommands();
const scratch = mkdtempSync(join(tmpdir(), 'ic-host-commands-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The host ids of the helper shells that this test process started and that still run. */
function helperPids(): number[] {
  const out = spawnSync('pgrep', ['-P', String(process.pid), '-f', 'read -r -d'], { encoding: 'utf8' }).stdout;
  return out.split('\n').filter(Boolean).map(Number);
}

describe('HostCommands', () => {
  it("gives each command's exit status and output, arguments passed as they are", async () => {
    expect(await commands.run(['true'])).toEqual({ status: 0, output: '' });
    expect(await commands.run(['sh', '-c', 'exit 3'])).toEqual({ status: 3, output: '' });
    expect(await commands.run(['printf', '%s|', 'a b', "it's", '$HOME', '*'])).toEqual({ status: 0, output: "a b|it's|$HOME|*|" });
    const missing = await commands.run(['/nonexistent/command']);
    expect(missing.status).toBe(127);
    expect(missing.output).toMatch(/No such file/);
  });

  it('makes FIFOs as mkfifo does (the channel uses it so)', async () => {
    const fifo = join(scratch, 'a.in');
    expect((await commands.run(['mkfifo', '-m', '600', fifo])).status).toBe(0);
    expect(statSync(fifo).isFIFO()).toBe(true);
    expect(statSync(fifo).mode & 0o777).toBe(0o600);
  });

  it('answers every command of many run at once to its own caller, in any order', async () => {
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => commands.run(['sh', '-c', `sleep 0.0${(30 - i) % 10}; echo "n=$0"; exit $(( $0 % 7 ))`, String(i)])),
    );
    results.forEach((r, i) => expect(r).toEqual({ status: i % 7, output: `n=${i}` }));
  });

  it('flattens and cuts long output so that one answer stays one line', async () => {
    const r = await commands.run(['sh', '-c', 'printf "x\\ny\\n"; head -c 5000 /dev/zero | tr "\\0" z']);
    expect(r.status).toBe(0);
    expect(r.output.startsWith('x y zzz')).toBe(true);
    expect(r.output.length).toBe(400);
    expect(await commands.run(['echo', 'next'])).toEqual({ status: 0, output: 'next' });
  });

  it('a command past its limit gives status null and holds up no other', async () => {
    const started = Date.now();
    const [slow, quick] = await Promise.all([commands.run(['sleep', '3'], 200), commands.run(['echo', 'quick'])]);
    expect(slow.status).toBeNull();
    expect(slow.output).toMatch(/no answer within 200 ms/);
    expect(quick).toEqual({ status: 0, output: 'quick' });
    expect(Date.now() - started).toBeLessThan(2_500);
  });

  it('refuses an argument list it cannot pass (empty, or a NUL byte)', () => {
    expect(() => commands.run([])).toThrow(RangeError);
    expect(() => commands.run(['echo', 'a\0b'])).toThrow(RangeError);
  });

  it('a helper killed mid-command answers its callers with null, and the next command starts a new one', async () => {
    const own = new HostCommands();
    expect((await own.run(['true'])).status).toBe(0);
    const before = helperPids();
    const waiting = own.run(['sleep', '5']);
    for (const pid of before) process.kill(pid, 'SIGKILL');
    expect((await waiting).status).toBeNull();
    expect(await own.run(['echo', 'again'])).toEqual({ status: 0, output: 'again' });
    expect(helperPids().some((pid) => !before.includes(pid))).toBe(true);
  });

  it('neither keeps its process alive nor outlives it', () => {
    const marker = join(scratch, 'helper-pid');
    const program = `
      import { HostCommands } from ${JSON.stringify(new URL('../../src/sandbox/docker/host-commands.ts', import.meta.url).pathname)};
      import { writeFileSync } from 'node:fs';
      const r = await new HostCommands().run(['sh', '-c', 'cut -d" " -f4 /proc/$PPID/stat']);
      writeFileSync(${JSON.stringify(marker)}, r.output);
    `;
    const started = Date.now();
    execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', program], { timeout: 20_000, cwd: process.cwd() });
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(existsSync(marker)).toBe(true);
    // The command's parent is a background subshell of the helper, whose parent is the
    // helper: it ends at the end of its input, which closed when the Node process exited.
    const helper = Number(execFileSync('cat', [marker], { encoding: 'utf8' }).trim());
    expect(helper).toBeGreaterThan(1);
    const alive = () => spawnSync('kill', ['-0', String(helper)]).status === 0;
    const deadline = Date.now() + 5_000;
    while (alive() && Date.now() < deadline) spawnSync('sleep', ['0.05']);
    expect(alive()).toBe(false);
  });
});
