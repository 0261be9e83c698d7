/**
 * The bash env's --reset plumbing without Docker: KeptWorkspace (with a factory of in-memory workspaces that
 * records what is created, reset, opened and destroyed), parseResetMode and chooseResetMode.
 */
import { describe, expect, it } from 'vitest';
import { EnvStateError, SandboxError } from '../../src/errors.js';
import { KeptWorkspace } from '../../src/pool/kept-workspace.js';
import type { Workspace, WorkspaceFactory } from '../../src/pool/types.js';
import type { ShellSession } from '../../src/sandbox/shell/shell-session.js';
import type { CommandRunner } from '../../src/sandbox/shell/types.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import { parseResetMode } from '../../envs/bash/intercode-reset.js';
import { chooseResetMode } from '../../envs/bash/plugin.js';
import { ConfigError } from '../../src/errors.js';

function recordingFactory() {
  const events: string[] = [];
  let sandboxes = 0;
  let runners = 0;
  const runner = (name: string): CommandRunner => ({
    cwd: '/',
    run: async () => ({ output: '', exitCode: 0, timedOut: false, outputBytes: 0, durationMs: 0, cwd: '/', events: [] }),
    close: () => events.push(`close ${name}`),
  });
  const factory: WorkspaceFactory = {
    create: async () => {
      const id = `s${++sandboxes}`;
      events.push(`create ${id}`);
      return { sandbox: { id } as Sandbox, runner: runner(`r${++runners}`), control: {} as ShellSession };
    },
    openRunner: async (sandbox) => {
      const name = `r${++runners}`;
      events.push(`open ${name} in ${sandbox.id}`);
      return runner(name);
    },
    destroy: async (workspace) => {
      events.push(`destroy ${workspace.sandbox.id}`);
    },
  };
  return { factory, events };
}

describe('KeptWorkspace', () => {
  it('keeps one sandbox, resets it before every loan (the first too) and gives each later loan a new runner', async () => {
    const { factory, events } = recordingFactory();
    const source = new KeptWorkspace(factory, async (w) => void events.push(`reset ${w.sandbox.id}`));
    const first = await source.acquire();
    source.release(first);
    const second = await source.acquire();
    expect(second.sandbox).toBe(first.sandbox);
    source.release(second);
    await source.close();
    expect(events).toEqual(['create s1', 'reset s1', 'close r1', 'reset s1', 'open r2 in s1', 'close r2', 'destroy s1']);
  });

  it('prepares each new sandbox once, before its first reset; a sandbox that fails to prepare is removed', async () => {
    const { factory, events } = recordingFactory();
    let failNext = true;
    const source = new KeptWorkspace(
      factory,
      async (w) => void events.push(`reset ${w.sandbox.id}`),
      async (w) => {
        events.push(`prepare ${w.sandbox.id}`);
        if (failNext) {
          failNext = false;
          throw new SandboxError('SANDBOX_UNAVAILABLE', 'cannot date the testbed');
        }
      },
    );
    await expect(source.acquire()).rejects.toThrow(/cannot date the testbed/);
    const first = await source.acquire();
    source.release(first);
    source.release(await source.acquire());
    await source.close();
    expect(events).toEqual(['create s1', 'prepare s1', 'destroy s1', 'create s2', 'prepare s2', 'reset s2', 'close r2', 'reset s2', 'open r3 in s2', 'close r3', 'destroy s2']);
  });

  it('refuses a second borrower while the workspace is lent', async () => {
    const { factory } = recordingFactory();
    const source = new KeptWorkspace(factory, async () => undefined);
    await source.acquire();
    await expect(source.acquire()).rejects.toBeInstanceOf(EnvStateError);
    await source.close();
  });

  it('replaces a sandbox that was lost, and resets the new one too', async () => {
    const { factory, events } = recordingFactory();
    let lose = false;
    const source = new KeptWorkspace(factory, async (w: Workspace) => {
      events.push(`reset ${w.sandbox.id}`);
      if (lose && w.sandbox.id === 's1') throw new SandboxError('SANDBOX_LOST', 'gone');
    });
    source.release(await source.acquire());
    lose = true;
    const next = await source.acquire();
    expect(next.sandbox.id).toBe('s2');
    await source.close();
    expect(events).toEqual(['create s1', 'reset s1', 'close r1', 'reset s1', 'destroy s1', 'create s2', 'reset s2', 'destroy s2']);
  });

  it('passes on a reset that failed for another reason and lends again after it', async () => {
    const { factory } = recordingFactory();
    let fail = true;
    const source = new KeptWorkspace(factory, async () => {
      if (fail) throw new SandboxError('SANDBOX_UNAVAILABLE', 'git clean failed');
    });
    await expect(source.acquire()).rejects.toThrow('git clean failed');
    fail = false;
    await expect(source.acquire()).resolves.toBeDefined();
    await source.close();
  });
});

describe('parseResetMode', () => {
  it('takes exact and intercode, refuses anything else naming the flag', () => {
    expect(parseResetMode('exact')).toBe('exact');
    expect(parseResetMode('intercode')).toBe('intercode');
    expect(() => parseResetMode('git')).toThrow(ConfigError);
    expect(() => parseResetMode('git')).toThrow('--reset');
  });
});

describe('chooseResetMode', () => {
  it("defaults to InterCode's lifecycle for replays and to exact restores elsewhere; a given value wins", () => {
    expect(chooseResetMode(undefined, 'replay')).toBe('intercode');
    for (const purpose of ['play', 'run', 'eval', 'collect'] as const) expect(chooseResetMode(undefined, purpose)).toBe('exact');
    expect(chooseResetMode('exact', 'replay')).toBe('exact');
    expect(chooseResetMode('intercode', 'eval')).toBe('intercode');
    expect(() => chooseResetMode('fresh', 'replay')).toThrow('--reset must be one of exact, intercode, got "fresh"');
  });
});
