/**
 * WorkspacePool and VecEnv without Docker: a scripted workspace factory and scripted envs.
 */
import { describe, expect, it } from 'vitest';
import type { ResetOptions, ResetResult, Score, StepResult, TaskEnv } from '../../src/env/types.js';
import { ConfigError, EnvStateError, SandboxError } from '../../src/errors.js';
import type { Workspace, WorkspaceFactory } from '../../src/pool/types.js';
import { WorkspacePool } from '../../src/pool/workspace-pool.js';
import type { CommandResult } from '../../src/sandbox/shell/types.js';
import { VecEnv } from '../../src/vec/vec-env.js';

function scriptedFactory(options: { failFirst?: number; failAlways?: boolean } = {}) {
  let made = 0;
  let runs = 0;
  const alive = new Map<Workspace, boolean>();
  const destroyed: Workspace[] = [];
  const factory: WorkspaceFactory = {
    async create() {
      made += 1;
      if (options.failAlways || made <= (options.failFirst ?? 0)) throw new SandboxError('SANDBOX_UNAVAILABLE', `image broken (attempt ${made})`);
      const id = made;
      const run = async (): Promise<CommandResult> => {
        runs += 1;
        if (!alive.get(workspace)) throw new SandboxError('SANDBOX_LOST', `sandbox ${id} is gone`);
        return { output: '', exitCode: 0, timedOut: false, outputBytes: 0, durationMs: 0, cwd: '/', events: [] } as unknown as CommandResult;
      };
      const runner = {
        run,
        cwd: '/',
        close() {},
        get isAlive() {
          return alive.get(workspace);
        },
      };
      const workspace = { sandbox: { id: String(id) }, runner, control: runner } as unknown as Workspace;
      alive.set(workspace, true);
      return workspace;
    },
    async openRunner() {
      throw new Error('not used');
    },
    async destroy(workspace) {
      alive.set(workspace, false);
      destroyed.push(workspace);
    },
  };
  return { factory, alive, destroyed, made: () => made, runs: () => runs };
}

describe('WorkspacePool', () => {
  it('keeps spares ready, never hands out a used workspace, and removes released ones when it cannot restore', async () => {
    const { factory, destroyed } = scriptedFactory();
    const pool = new WorkspacePool(factory, { borrowers: 2, minIdle: 1 });
    await pool.ready();
    expect(pool.stats().idle).toBe(3);
    const a = await pool.acquire();
    pool.release(a);
    const seen = new Set<Workspace>();
    for (let i = 0; i < 5; i++) {
      const w = await pool.acquire();
      expect(w).not.toBe(a);
      expect(seen.has(w)).toBe(false);
      seen.add(w);
      pool.release(w);
    }
    await pool.close();
    expect(destroyed).toContain(a);
  });

  it('acquireIfIdle hands out only ready workspaces, one each to calls made at once, and makes none', async () => {
    const { factory, made } = scriptedFactory();
    const pool = new WorkspacePool(factory, { borrowers: 1, minIdle: 1, max: 2 });
    await pool.ready(2);
    // Two idle: three calls at once get two different workspaces and one undefined, at once.
    const taken = await Promise.all([pool.acquireIfIdle(), pool.acquireIfIdle(), pool.acquireIfIdle()]);
    expect(taken.filter(Boolean)).toHaveLength(2);
    expect(new Set(taken.filter(Boolean)).size).toBe(2);
    expect(taken[2]).toBeUndefined();
    expect(made()).toBe(2);
    expect(pool.stats().lent).toBe(2);
    await pool.close();
  });

  it('returns a restored workspace to the idle set', async () => {
    const { factory } = scriptedFactory();
    const pool = new WorkspacePool(factory, { borrowers: 1, minIdle: 0, restore: async () => ({ clean: true }) });
    const a = await pool.acquire();
    pool.release(a);
    await new Promise((r) => setTimeout(r, 20));
    expect(await pool.acquire()).toBe(a);
    expect(pool.stats().restored).toBe(1);
    await pool.close();
  });

  it('hands out a workspace just made or restored without a liveness round trip, and checks an older one', async () => {
    const { factory, runs } = scriptedFactory();
    const pool = new WorkspacePool(factory, { borrowers: 1, minIdle: 0, restore: async () => ({ clean: true }) });
    const a = await pool.acquire();
    expect(runs()).toBe(0);
    pool.release(a);
    await new Promise((r) => setTimeout(r, 20));
    expect(await pool.acquire()).toBe(a);
    expect(runs()).toBe(0);
    pool.release(a);
    await new Promise((r) => setTimeout(r, 1_100));
    expect(await pool.acquire()).toBe(a);
    expect(runs()).toBe(1);
    await pool.close();
  });

  it('destroys a dead workspace on borrow instead of handing it out', async () => {
    const { factory, alive } = scriptedFactory();
    const pool = new WorkspacePool(factory, { borrowers: 1, minIdle: 1 });
    await pool.ready();
    for (const w of alive.keys()) alive.set(w, false);
    const w = await pool.acquire();
    expect(alive.get(w)).toBe(true);
    expect(pool.stats().rejectedOnBorrow).toBeGreaterThan(0);
    await pool.close();
  });

  it('fails fast with the cause when the factory keeps failing, and recovers from a few failures', async () => {
    const broken = scriptedFactory({ failAlways: true });
    const pool = new WorkspacePool(broken.factory, { borrowers: 1, minIdle: 1, maxConsecutiveFailures: 3 });
    await expect(pool.acquire()).rejects.toThrow(/stopped creating sandboxes after 3 failures in a row: image broken/);
    await expect(pool.acquire()).rejects.toBeInstanceOf(SandboxError);
    await pool.close();
    expect(broken.made()).toBeLessThan(10);

    const flaky = scriptedFactory({ failFirst: 2 });
    const ok = new WorkspacePool(flaky.factory, { borrowers: 1, minIdle: 0, maxConsecutiveFailures: 3 });
    expect(await ok.acquire()).toBeDefined();
    await ok.close();
  });

  it('rejects bad options naming the option', () => {
    expect(() => new WorkspacePool(scriptedFactory().factory, { minIdle: -1 })).toThrow(ConfigError);
    expect(() => new WorkspacePool(scriptedFactory().factory, { max: 0 })).toThrow(/pool.max must be an integer ≥ 1/);
  });
});

/** An env whose episodes last `length` steps; "die" truncates as a lost sandbox does. */
class ScriptedEnv implements TaskEnv {
  readonly id = 'test/scripted-v0';
  readonly tasks = [{ index: 0, id: '0', query: 'q0', gold: 'g', metadata: {} }, { index: 1, id: '1', query: 'q1', gold: 'g', metadata: {} }];
  resets = 0;
  private t = 0;
  constructor(private readonly length: number) {}
  async reset(options: ResetOptions = {}): Promise<ResetResult> {
    this.resets += 1;
    this.t = 0;
    const task = this.tasks[typeof options.task === 'number' ? options.task : 0]!;
    return { observation: task.query, info: { task } };
  }
  async step(action: string): Promise<StepResult> {
    this.t += 1;
    const info = { actionExecuted: true, exitCode: 0, durationMs: 0, events: [] };
    if (action === 'die') return { observation: 'lost', reward: 0, terminated: false, truncated: true, info: { ...info, truncation: { reason: 'sandbox-lost', message: 'killed from outside' } } };
    if (action === 'slow') await new Promise((r) => setTimeout(r, 50));
    const end = this.t >= this.length;
    return { observation: `${action}@${this.t}`, reward: end ? 1 : 0, terminated: end, truncated: false, info };
  }
  async peekScore(): Promise<Score> {
    return { reward: 0, parts: {}, details: {} };
  }
  async close(): Promise<void> {}
}

describe('VecEnv', () => {
  it('steps all envs in order; disabled autoreset refuses to step an ended env', async () => {
    const vec = new VecEnv([new ScriptedEnv(1), new ScriptedEnv(2)], { autoreset: 'disabled' });
    expect((await vec.reset()).map((r) => r.observation)).toEqual(['q0', 'q0']);
    const batch = await vec.step(['a', 'b']);
    expect(batch.map((s) => [s.envId, s.observation, s.terminated])).toEqual([[0, 'a@1', true], [1, 'b@1', false]]);
    await expect(vec.step(['a', 'b'])).rejects.toBeInstanceOf(EnvStateError);
    await vec.reset([0]);
    expect((await vec.step(['c', 'd']))[1]!.terminated).toBe(true);
  });

  it('next-step autoreset: the step after the end resets and ignores its action', async () => {
    const env = new ScriptedEnv(1);
    const vec = new VecEnv([env], { autoreset: 'next-step', nextTask: () => ({ task: 1 }) });
    await vec.reset();
    expect((await vec.step(['a']))[0]!.terminated).toBe(true);
    const after = (await vec.step(['ignored']))[0]!;
    expect(after).toMatchObject({ observation: 'q1', reward: 0, terminated: false, info: { autoreset: true } });
    expect(env.resets).toBe(2);
  });

  it('same-step autoreset: the ending step returns the new first observation and the final one in info', async () => {
    const vec = new VecEnv([new ScriptedEnv(1)], { autoreset: 'same-step', nextTask: () => ({ task: 1 }) });
    await vec.reset();
    const [s] = await vec.step(['a']);
    expect(s).toMatchObject({ observation: 'q1', reward: 1, terminated: true, info: { finalObservation: 'a@1' } });
  });

  it('send/recv returns whichever envs finish first; a lost sandbox is a truncated step with its cause', async () => {
    const vec = new VecEnv([new ScriptedEnv(5), new ScriptedEnv(5), new ScriptedEnv(5)], { autoreset: 'next-step' });
    await vec.reset();
    vec.send(['slow', 'fast', 'die']);
    const first = await vec.recv(2);
    expect(first.map((s) => s.envId).sort()).toEqual([1, 2]);
    expect(first.find((s) => s.envId === 2)).toMatchObject({ truncated: true, reward: 0, info: { truncation: { reason: 'sandbox-lost' } } });
    expect(() => vec.send(['again'], [0])).toThrow(EnvStateError);
    expect((await vec.recv())[0]!.envId).toBe(0);
    await expect(vec.recv()).rejects.toThrow(/nothing sent/);
    await vec.close();
  });
});
