/**
 * FileProbe (envs/bash/file-probe.ts) on a scripted runner: what it reads is scored only
 * when it came back whole. The same in a real sandbox: test/integration/bash-env.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { FileProbe } from '../../envs/bash/file-probe.js';
import { SandboxError } from '../../src/errors.js';
import type { CommandEvent, CommandResult, CommandRunner } from '../../src/sandbox/shell/types.js';

/** A runner that answers every command with `result` and remembers the commands. */
function scripted(result: Partial<CommandResult>): CommandRunner & { commands: string[] } {
  const commands: string[] = [];
  return {
    commands,
    cwd: '/',
    close: () => undefined,
    run: async (command) => {
      commands.push(command);
      return { output: '', exitCode: 0, timedOut: false, outputBytes: 0, durationMs: 1, cwd: '/', events: [], ...result };
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
    expect(runner.commands).toEqual(["( PATH=/usr/sbin:/usr/bin:/sbin:/bin GIT_CONFIG_GLOBAL=/dev/null; export GIT_CONFIG_GLOBAL; cd / && md5sum 'testbed/a.txt' 2>&1 )"]);
  });

  it("a failed sum (a missing file) is a finished command: its text is what is compared", async () => {
    const text = 'md5sum: testbed/a.txt: No such file or directory\n';
    const hashes = await new FileProbe(scripted({ output: text, exitCode: 1 })).hashes(['testbed/a.txt'], 'intercode');
    expect(hashes.get('testbed/a.txt')).toBe(text);
  });
});
