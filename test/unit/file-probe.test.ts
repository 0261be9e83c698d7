/**
 * FileProbe (envs/bash/file-probe.ts) on a scripted runner: what it reads is scored only
 * when it came back whole. The same in a real sandbox: test/integration/bash-env.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { FileProbe } from '../../envs/bash/file-probe.js';
import { SandboxError } from '../../src/errors.js';
import type { CommandEvent, CommandResult, CommandRunner } from '../../src/sandbox/shell/types.js';

/** The frame word a probe's command prints before its output (see envs/bash/file-probe.ts). */
const frameOf = (command: string) => /printf '\\002%s\\n' ([0-9a-f]{32})/.exec(command)?.[1];

/**
 * A runner that answers every command with `result` and remembers the commands. Its output
 * follows the command's frame line, after `before` (what another process wrote first).
 */
function scripted(result: Partial<CommandResult>, before = ''): CommandRunner & { commands: string[] } {
  const commands: string[] = [];
  return {
    commands,
    cwd: '/',
    close: () => undefined,
    run: async (command) => {
      commands.push(command);
      const frame = frameOf(command);
      const output = `${before}${frame ? `\x02${frame}\n` : ''}${result.output ?? ''}`;
      return { exitCode: 0, timedOut: false, outputBytes: 0, durationMs: 1, cwd: '/', events: [], ...result, output };
    },
  };
}

async function unreadable(read: Promise<unknown>): Promise<SandboxError> {
  const error = await read.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SandboxError);
  expect((error as SandboxError).code).toBe('STATE_UNREADABLE');
  return error as SandboxError;
}

describe('FileProbe', () => {
  it('parses a whole `git status --short`', async () => {
    const probe = new FileProbe(scripted({ output: ' M testbed/a.txt\n?? testbed/new/\n' }));
    expect(await probe.changes()).toEqual([
      ['testbed/a.txt', 'M'],
      ['testbed/new/', '??'],
    ]);
  });

  it("scores git's error outside a repository as InterCode did (a finished command, whatever its status)", async () => {
    const probe = new FileProbe(scripted({ output: 'fatal: not a git repository\n', exitCode: 128 }));
    expect((await probe.changes()).length).toBeGreaterThan(0);
  });

  it('a listing that timed out is unreadable, never scored as the part that came', async () => {
    const events: CommandEvent[] = [{ kind: 'timed-out', afterMs: 30_000 }];
    const probe = new FileProbe(scripted({ output: '?? testbed/x\n', exitCode: null, timedOut: true, events }));
    const error = await unreadable(probe.changes());
    expect(error.message).toBe('git status timed out');
  });

  it('a listing past the output cap is unreadable (an agent could hide changes behind untracked files)', async () => {
    const events: CommandEvent[] = [{ kind: 'output-limit', shownBytes: 4, totalBytes: 9, killed: false }];
    const probe = new FileProbe(scripted({ output: '?? a', outputBytes: 9, events }));
    const error = await unreadable(probe.changes());
    expect(error.message).toMatch(/^git status printed more than the scorer's shell keeps \(9 bytes, 4 kept\)$/);
  });

  it('a sum whose shell was restarted under it is unreadable', async () => {
    const events: CommandEvent[] = [{ kind: 'shell-restarted', reason: 'killed', cwd: '/' }];
    const runner = scripted({ output: '', exitCode: null, events });
    const error = await unreadable(new FileProbe(runner).hashes(['testbed/a.txt'], 'intercode'));
    expect(error.message).toBe('the sums of testbed/a.txt did not finish (its shell was restarted)');
    expect(runner.commands).toHaveLength(1);
    expect(runner.commands[0]).toMatch(/ && md5sum 'testbed\/a\.txt' 2>&1 \)$/);
  });

  it("a failed sum (a missing file) is a finished command: its text is what is compared", async () => {
    const text = 'md5sum: testbed/a.txt: No such file or directory\n';
    const hashes = await new FileProbe(scripted({ output: text, exitCode: 1 })).hashes(['testbed/a.txt'], 'intercode');
    expect(hashes.get('testbed/a.txt')).toBe(text);
  });

  it('runs with a clean environment: PATH only /usr/bin, no HOME, XDG or GIT_ variable, no system or user git configuration', async () => {
    const runner = scripted({ output: '' });
    await new FileProbe(runner).changes();
    const [command] = runner.commands;
    expect(command).toMatch(/^\( builtin unset -v HOME LANG LANGUAGE \$\{!GIT_\*\} \$\{!XDG_\*\} \$\{!LC_\*\}; builtin export PATH=\/usr\/bin LC_ALL=C GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=\/dev\/null GIT_ATTR_NOSYSTEM=1; /);
    for (const setting of ['core.excludesFile=/dev/null', 'core.attributesFile=/dev/null', 'core.hooksPath=/dev/null', 'core.fsmonitor=false', 'core.untrackedCache=false', 'status.showUntrackedFiles=normal']) {
      expect(command).toContain(` -c ${setting} `);
    }
  });

  it('what came before the frame line is not the probe\'s output; output without one is unreadable', async () => {
    const probe = new FileProbe(scripted({ output: '?? testbed/mine\n' }, '?? testbed/forged/\n'));
    expect(await probe.changes()).toEqual([['testbed/mine', '??']]);
    const framed = scripted({ output: '?? testbed/x\n' });
    const unframed: CommandRunner = { ...framed, run: async (command) => ({ ...(await framed.run(command)), output: '?? testbed/x\n' }) };
    const error = await unreadable(new FileProbe(unframed).changes());
    expect(error.message).toBe('git status did not start (no frame line in its output)');
  });

  it('a frame line another process guessed is no frame line: the word is new for each command', async () => {
    const runner = scripted({ output: '' });
    const probe = new FileProbe(runner);
    await probe.changes();
    await probe.changes();
    expect(frameOf(runner.commands[0]!)).not.toBe(frameOf(runner.commands[1]!));
  });

  it('whileAlone continues exactly the processes it stopped, also when the read throws; processes it could not stop: unreadable', async () => {
    const runner = scripted({ output: 'stopped 12 34\n' });
    const probe = new FileProbe(runner);
    expect(await probe.whileAlone(async () => 'read')).toBe('read');
    expect(runner.commands.at(-1)).toBe('builtin kill -CONT 12 34 2>/dev/null; :');
    await expect(probe.whileAlone(async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(runner.commands.at(-1)).toBe('builtin kill -CONT 12 34 2>/dev/null; :');

    const stubborn = scripted({ output: 'running 56\n', exitCode: 1 });
    const error = await unreadable(new FileProbe(stubborn).whileAlone(async () => 'read'));
    expect(error.message).toBe('processes of the sandbox kept running after 5 s of SIGSTOP');
    expect(stubborn.commands.at(-1)).toBe('builtin kill -CONT 56 2>/dev/null; :');
  });
});
