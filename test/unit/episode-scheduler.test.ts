/**
 * The episode scheduler without Docker: which mode it picks (pooled, fresh, own), that pooled
 * envs take every workspace from one pool and fresh
 * ones a new workspace per reset, the first-episode clock, the --parallel default and the
 * --sandboxes check.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Task } from '../../src/datasets/index.js';
import { defaultParallel, EpisodeScheduler, parseSandboxMode } from '../../src/scheduler/index.js';
import { writeEpisodeLogs } from '../../src/env/episode-log-writer.js';
import { SandboxEnv } from '../../src/env/sandbox-env.js';
import type { EpisodeState } from '../../src/env/sandbox-env-types.js';
import type { ResetResult, Score, StepResult, TaskEnv } from '../../src/env/types.js';
import { ConfigError } from '../../src/errors.js';
import { FreshWorkspaces } from '../../src/pool/fresh-workspaces.js';
import { pooledEnvSlots } from '../../src/server/pooled-env-slots.js';
import type { Workspace, WorkspaceFactory } from '../../src/pool/types.js';
import type { CommandResult, CommandRunner } from '../../src/sandbox/shell/types.js';
import type { SandboxRuntime } from '../../src/sandbox/types.js';
import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS } from '../../src/sandbox/types.js';

const TASKS: Task[] = Array.from({ length: 6 }, (_, i) => ({ index: i, id: String(i), query: `task ${i}`, gold: `echo ${i}`, metadata: {} }));

/** Counts workspaces made and removed; each is a scripted runner that answers every command. */
function countingFactory() {
  const counts = { created: 0, destroyed: 0 };
  const factory: WorkspaceFactory = {
    async create() {
      counts.created += 1;
      const run = async (): Promise<CommandResult> =>
        ({ output: '', exitCode: 0, timedOut: false, outputBytes: 0, durationMs: 0, cwd: '/', events: [] }) as unknown as CommandResult;
      const runner = { run, cwd: '/', close() {}, isAlive: true };
      return { sandbox: { id: `s${counts.created}` }, runner, control: runner } as unknown as Workspace;
    },
    async openRunner() {
      throw new Error('not used');
    },
    async destroy() {
      counts.destroyed += 1;
    },
  };
  return { factory, counts };
}

/** A SandboxEnv over the scripted factory, scoring every episode 1. */
class ScriptedEnv extends SandboxEnv {
  readonly id = 'test/scripted-v0';
  readonly logName = 'scripted';
  override readonly sharesWorkspaces: boolean;

  constructor(
    private readonly made: WorkspaceFactory,
    shares = true,
  ) {
    super({ runtime: {} as SandboxRuntime, spec: { image: 'x', hostname: 'x', limits: DEFAULT_LIMITS, capabilities: DEFAULT_CAPABILITIES }, dataset: TASKS });
    this.sharesWorkspaces = shares;
    // SandboxEnv's constructor made its default source before `made` was set: the scripted one instead.
    this.useWorkspaces(new FreshWorkspaces(made), { own: true });
  }

  override workspaceFactory(): WorkspaceFactory {
    return this.made;
  }

  protected async openRunner(): Promise<CommandRunner> {
    throw new Error('not used');
  }

  protected async score(_episode: EpisodeState): Promise<Score> {
    return { reward: 1, parts: {}, details: {} };
  }
}

async function playAll(scheduler: EpisodeScheduler): Promise<number[]> {
  const rewards: number[] = [];
  await scheduler.forEach(TASKS, async (env, task) => {
    await env.reset({ task });
    await env.step('echo hi');
    rewards[task.index] = (await env.step('submit')).reward;
  });
  return rewards;
}

describe('EpisodeScheduler', () => {
  it('puts envs that can share workspaces on one warm pool: resets take pooled workspaces, close removes them all', async () => {
    const { factory, counts } = countingFactory();
    const envs = [new ScriptedEnv(factory), new ScriptedEnv(factory)];
    const scheduler = new EpisodeScheduler(envs, { pool: { clean: 'replace' } });
    expect(scheduler.mode).toBe('pooled');
    expect(scheduler.pool).toBeDefined();
    expect(await playAll(scheduler)).toEqual([1, 1, 1, 1, 1, 1]);
    expect(scheduler.stats()!.created).toBe(counts.created);
    expect(scheduler.firstEpisodeAt).toBeGreaterThan(0);
    await scheduler.close();
    expect(counts.destroyed).toBe(counts.created);
  });

  it('envs that write episode logs share the pool their SandboxEnvs would, and every episode gets its log', async () => {
    const { factory } = countingFactory();
    const dir = mkdtempSync(join(tmpdir(), 'scheduler-logs-'));
    try {
      const scheduler = new EpisodeScheduler([writeEpisodeLogs(new ScriptedEnv(factory), dir), writeEpisodeLogs(new ScriptedEnv(factory), dir)], { pool: { clean: 'replace' } });
      expect(scheduler.mode).toBe('pooled');
      expect(await playAll(scheduler)).toEqual([1, 1, 1, 1, 1, 1]);
      await scheduler.close();
      const logs = readdirSync(dir).map((file) => JSON.parse(readFileSync(join(dir, file), 'utf8')) as { query_idx: number; reward: number; trajectory: unknown[] });
      expect(logs.map((log) => log.query_idx).sort()).toEqual([0, 1, 2, 3, 4, 5]);
      expect(logs.every((log) => log.reward === 1 && log.trajectory.length === 1)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a server's slots over envs that write episode logs pool them as their SandboxEnvs, and hand each episode's sandbox back", async () => {
    const { factory, counts } = countingFactory();
    const dir = mkdtempSync(join(tmpdir(), 'slots-logs-'));
    try {
      const slots = pooledEnvSlots('scripted', [writeEpisodeLogs(new ScriptedEnv(factory), dir)], { spares: 1 });
      expect(slots.sandboxLimit).toBeDefined();
      await slots.ready();
      const env = slots.take()!;
      await env.reset({ task: 0 });
      expect((await env.step('submit')).reward).toBe(1);
      await slots.give(env);
      expect(slots.poolCounts()?.inUse).toBe(0);
      await slots.close();
      expect(counts.destroyed).toBe(counts.created);
      expect(readdirSync(dir)).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('--sandboxes fresh: a new workspace per reset, no pool', async () => {
    const { factory, counts } = countingFactory();
    const scheduler = new EpisodeScheduler([new ScriptedEnv(factory), new ScriptedEnv(factory)], { sandboxes: 'fresh' });
    expect(scheduler.mode).toBe('fresh');
    expect(scheduler.pool).toBeUndefined();
    await playAll(scheduler);
    await scheduler.close();
    expect(counts.created).toBe(TASKS.length);
    expect(counts.destroyed).toBe(counts.created);
  });

  it('steps envs that cannot share workspaces as they are (own), and any TaskEnv that is not a SandboxEnv', async () => {
    const { factory } = countingFactory();
    expect(new EpisodeScheduler([new ScriptedEnv(factory, false)]).mode).toBe('own');
    const plain: TaskEnv = {
      id: 'plain',
      tasks: TASKS,
      reset: async (): Promise<ResetResult> => ({ observation: 'q', info: { task: null } }),
      step: async (action: string): Promise<StepResult> => ({ observation: '', reward: action === 'submit' ? 1 : 0, terminated: action === 'submit', truncated: false, info: { actionExecuted: true, exitCode: 0, durationMs: 0, events: [] } }),
      peekScore: async () => ({ reward: 1, parts: {}, details: {} }),
      close: async () => undefined,
    };
    const scheduler = new EpisodeScheduler([plain, plain]);
    expect(scheduler.mode).toBe('own');
    expect(await playAll(scheduler)).toEqual([1, 1, 1, 1, 1, 1]);
    await scheduler.close();
  });

  it('refuses no envs', () => {
    expect(() => new EpisodeScheduler([])).toThrow(ConfigError);
  });
});

describe('scheduler flags', () => {
  it('--parallel defaults to one per core, at least 2', () => {
    expect(defaultParallel(1)).toBe(2);
    expect(defaultParallel(2)).toBe(2);
    expect(defaultParallel(12)).toBe(12);
    expect(defaultParallel(0)).toBe(2);
  });

  it('--sandboxes takes pooled or fresh, naming the flag otherwise', () => {
    expect(parseSandboxMode('fresh')).toBe('fresh');
    expect(() => parseSandboxMode('warm')).toThrow(/--sandboxes must be one of pooled, fresh, got "warm"/);
  });
});



