/**
 * VecEpisodeDriver and vecEnvFor without Docker: scripted envs whose steps take as long as
 * their action says, lose their sandbox, or throw.
 */
import { describe, expect, it, vi } from 'vitest';
import type { Task } from '../../src/datasets/index.js';
import { SandboxEnv } from '../../src/env/sandbox-env.js';
import type { ResetOptions, ResetResult, Score, StepResult, TaskEnv } from '../../src/env/types.js';
import { ConfigError, EnvStateError } from '../../src/errors.js';
import type { SandboxRuntime } from '../../src/sandbox/types.js';
import { VecEnv, vecEnvFor, VecEpisodeDriver } from '../../src/vec/index.js';

const TASKS: Task[] = Array.from({ length: 8 }, (_, i) => ({ index: i, id: `t${i}`, query: `q${i}`, gold: 'g', metadata: {} }));

/**
 * Actions: `wait:N` takes N ms; `die` truncates as a lost sandbox does; `boom` throws;
 * `submit` ends with reward 1 when `good` ran. Refuses a step while another is running,
 * and a reset mid-step: the driver must give each env one episode at a time.
 */
class ScriptedEnv implements TaskEnv {
  readonly id = 'test/scripted-v0';
  readonly tasks = TASKS;
  readonly episodes: number[] = [];
  peeks = 0;
  private stepping = false;
  private ranGood = false;
  constructor(private readonly log: string[]) {}

  async reset(options: ResetOptions = {}): Promise<ResetResult> {
    if (this.stepping) throw new Error('reset during a step');
    const task = typeof options.task === 'object' ? options.task : TASKS[options.task ?? 0]!;
    this.episodes.push(task.index);
    this.ranGood = false;
    return { observation: task.query, info: { task } };
  }

  async step(action: string): Promise<StepResult> {
    if (this.stepping) throw new Error('two steps at once');
    this.stepping = true;
    try {
      const info = { actionExecuted: true, exitCode: 0, durationMs: 0, events: [] };
      if (action.startsWith('wait:')) await new Promise((r) => setTimeout(r, Number(action.slice(5))));
      this.log.push(action);
      if (action === 'boom') throw new Error('the scorer crashed');
      if (action === 'die') return { observation: 'lost', reward: 0, terminated: false, truncated: true, info: { ...info, actionExecuted: false, truncation: { reason: 'sandbox-lost', message: 'container killed' } } };
      if (action === 'good') this.ranGood = true;
      if (action === 'submit') return { observation: '', reward: this.ranGood ? 1 : 0, terminated: true, truncated: false, info };
      return { observation: `ran ${action}`, reward: 0, terminated: false, truncated: false, info };
    } finally {
      this.stepping = false;
    }
  }

  async peekScore(): Promise<Score> {
    if (this.stepping) throw new Error('peek during a step');
    this.peeks += 1;
    return { reward: this.ranGood ? 1 : 0, parts: {}, details: {} };
  }

  async close(): Promise<void> {}
}

interface Job {
  task: Task;
  actions: string[];
}

interface Outcome {
  task: number;
  reward: number;
  truncated?: string;
  observations: string[];
}

/** Plays a job's actions until the episode ends, as sequential episode code does. */
async function playScript(env: TaskEnv, job: Job, outcomes: Outcome[]): Promise<void> {
  const { observation } = await env.reset({ task: job.task });
  const observations = [observation];
  for (const action of job.actions) {
    const step = await env.step(action);
    observations.push(step.observation);
    if (step.truncated) return void outcomes.push({ task: job.task.index, reward: 0, truncated: step.info.truncation!.message, observations });
    if (step.terminated) return void outcomes.push({ task: job.task.index, reward: step.reward, observations });
    if ((await env.peekScore()).reward === 1) return void outcomes.push({ task: job.task.index, reward: 1, observations });
  }
}

function setup(count: number) {
  const log: string[] = [];
  const envs = Array.from({ length: count }, () => new ScriptedEnv(log));
  const vec = new VecEnv(envs, { autoreset: 'disabled' });
  return { log, envs, vec, driver: new VecEpisodeDriver(vec) };
}

describe('VecEpisodeDriver', () => {
  it('plays every job through send/recv, each env one episode at a time, taking the next job when one ends', async () => {
    const { envs, vec, driver } = setup(3);
    const send = vi.spyOn(vec, 'send');
    const recv = vi.spyOn(vec, 'recv');
    const jobs: Job[] = [
      { task: TASKS[0]!, actions: ['wait:60', 'wait:60', 'submit'] },
      { task: TASKS[1]!, actions: ['wait:5', 'good', 'never'] },
      { task: TASKS[2]!, actions: ['wait:10', 'submit'] },
      { task: TASKS[3]!, actions: ['wait:5', 'wait:5', 'submit'] },
      { task: TASKS[4]!, actions: ['good', 'submit'] },
      { task: TASKS[5]!, actions: ['wait:1', 'submit'] },
    ];
    const outcomes: Outcome[] = [];
    await driver.forEach(jobs, (env, job) => playScript(env, job, outcomes));

    expect(outcomes.map((o) => o.task).sort()).toEqual([0, 1, 2, 3, 4, 5]);
    // Out of order: the long first episode finishes after the short ones that started later.
    expect(outcomes.map((o) => o.task).indexOf(0)).toBeGreaterThan(outcomes.map((o) => o.task).indexOf(3));
    expect(Object.fromEntries(outcomes.map((o) => [o.task, o.reward]))).toEqual({ 0: 0, 1: 1, 2: 0, 3: 0, 4: 1, 5: 0 });
    // Task 1 stopped at the peeked reward 1 (its third action never ran); observations come back to the right episode.
    expect(outcomes.find((o) => o.task === 1)!.observations).toEqual(['q1', 'ran wait:5', 'ran good']);
    // The env that played the long episode played only it; the others took the rest between them.
    const perEnv = envs.map((e) => e.episodes);
    expect(perEnv.find((e) => e.includes(0))).toEqual([0]);
    expect(perEnv.flat().sort()).toEqual([0, 1, 2, 3, 4, 5]);
    // Every action that ran went through the VecEnv (13: episodes that stopped at a peeked 1 sent no more).
    expect(send).toHaveBeenCalledTimes(13);
    expect(send.mock.calls.every(([actions, ids]) => actions.length === 1 && ids!.length === 1)).toBe(true);
    expect(recv).toHaveBeenCalled();
    await driver.close();
  });

  it('hands a lost sandbox to its episode as a truncated step with the cause; the env then takes the next job', async () => {
    const { envs, driver } = setup(2);
    const outcomes: Outcome[] = [];
    const jobs: Job[] = [
      { task: TASKS[0]!, actions: ['wait:5', 'die', 'never'] },
      { task: TASKS[1]!, actions: ['wait:30', 'good', 'submit'] },
      { task: TASKS[2]!, actions: ['good', 'submit'] },
    ];
    await driver.forEach(jobs, (env, job) => playScript(env, job, outcomes));
    expect(outcomes.find((o) => o.task === 0)).toMatchObject({ reward: 0, truncated: 'container killed', observations: ['q0', 'ran wait:5', 'lost'] });
    expect(outcomes.find((o) => o.task === 2)).toMatchObject({ reward: 1 });
    expect(envs.find((e) => e.episodes[0] === 0)!.episodes).toEqual([0, 2]);
  });

  it('after an abort starts no episode, and lets those in flight finish', async () => {
    const { driver } = setup(2);
    const stop = new AbortController();
    const outcomes: Outcome[] = [];
    const jobs: Job[] = [
      { task: TASKS[0]!, actions: ['wait:1', 'submit'] },
      { task: TASKS[1]!, actions: ['wait:40', 'wait:40', 'submit'] },
      ...TASKS.slice(2).map((task) => ({ task, actions: ['submit'] })),
    ];
    await driver.forEach(
      jobs,
      async (env, job) => {
        await playScript(env, job, outcomes);
        if (job.task.index === 0) stop.abort();
      },
      stop.signal,
    );
    expect(outcomes.map((o) => o.task).sort()).toEqual([0, 1]);
    expect(outcomes.find((o) => o.task === 1)!.observations).toHaveLength(4);
  });

  it('a step that throws fails its own episode with the original error; the others finish, no new one starts', async () => {
    const { envs, driver } = setup(2);
    const outcomes: Outcome[] = [];
    const jobs: Job[] = [
      { task: TASKS[0]!, actions: ['wait:5', 'boom'] },
      { task: TASKS[1]!, actions: ['wait:30', 'other', 'submit'] },
      { task: TASKS[2]!, actions: ['submit'] },
    ];
    const failed = driver.forEach(jobs, (env, job) => playScript(env, job, outcomes));
    await expect(failed).rejects.toThrow(/^the scorer crashed$/);
    expect(outcomes.map((o) => o.task)).toEqual([1]);
    expect(envs.flatMap((e) => e.episodes).sort()).toEqual([0, 1]);
    expect(outcomes[0]!.observations).toEqual(['q1', 'ran wait:30', 'ran other', '']);
  });

  it('refuses an autoresetting VecEnv, a second batch at once, and closing an env it owns', async () => {
    expect(() => new VecEpisodeDriver(new VecEnv([new ScriptedEnv([])], { autoreset: 'next-step' }))).toThrow(ConfigError);
    const { driver } = setup(1);
    const first = driver.forEach([{ task: TASKS[0]!, actions: ['wait:20', 'submit'] }], async (env, job) => {
      await expect(env.close()).rejects.toBeInstanceOf(EnvStateError);
      await playScript(env, job, []);
    });
    await expect(driver.forEach([], async () => undefined)).rejects.toThrow(/already playing/);
    await first;
  });
});

/** A SandboxEnv that counts the sandboxes it is asked for (and makes none). */
class CountingSandboxEnv extends SandboxEnv {
  readonly logName = 'counting';
  constructor(
    readonly id: string,
    readonly created: { count: number },
    override readonly sharesWorkspaces = false,
  ) {
    const runtime = { create: async () => Promise.reject(new Error(`no sandboxes in this test (${++created.count})`)) } as unknown as SandboxRuntime;
    super({ runtime, spec: {} as never });
  }
  protected openRunner(): never {
    throw new Error('not used');
  }
  protected score(): never {
    throw new Error('not used');
  }
}

describe('vecEnvFor', () => {
  it('steps envs that cannot share a pool as they are: no sandbox is made ahead of a reset', async () => {
    const envs = [new ScriptedEnv([]), new ScriptedEnv([])];
    const vec = vecEnvFor(envs, { autoreset: 'disabled' });
    expect(vec.envs).toEqual(envs);
    expect(vec.autoresetMode).toBe('disabled');
    const created = { count: 0 };
    const python = vecEnvFor([new CountingSandboxEnv('intercode/python-v1', created), new CountingSandboxEnv('intercode/ctf-v1', created)], { autoreset: 'disabled' });
    await new Promise((r) => setTimeout(r, 20));
    expect(created.count).toBe(0);
    await python.close();
    expect(() => vecEnvFor([], { autoreset: 'disabled' })).toThrow(ConfigError);
  });

  it('gives bash envs one warm pool, which starts making sandboxes before any reset', async () => {
    const created = { count: 0 };
    const vec = vecEnvFor([new CountingSandboxEnv('intercode/bash-v1', created, true), new CountingSandboxEnv('intercode/bash-v1', created, true)], { autoreset: 'disabled', pool: { maxConsecutiveFailures: 1 } });
    await new Promise((r) => setTimeout(r, 20));
    expect(created.count).toBeGreaterThan(0);
    await vec.close();
  });
});
