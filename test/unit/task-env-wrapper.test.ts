/** The one wrapper base every forwarding TaskEnv extends (src/env/task-env-wrapper.ts). */
import { describe, expect, it } from 'vitest';
import type { Task } from '../../src/datasets/index.js';
import { ForkingTaskEnvWrapper, TaskEnvWrapper } from '../../src/env/task-env-wrapper.js';
import { isForkable, type ForkableEnv, type StepOptions, type TaskEnv } from '../../src/env/types.js';
import { CheckpointError } from '../../src/errors.js';

const TASK: Task = { index: 0, id: 't0', query: 'q', gold: 'g', metadata: {} };

/** An env that records every call made to it. */
function recordingEnv(id: string, forkable: boolean): TaskEnv & { calls: unknown[] } {
  const calls: unknown[] = [];
  const env = {
    id,
    tasks: [TASK],
    calls,
    reset: async (options?: unknown) => (calls.push(['reset', options]), { observation: `${id} reset`, info: { task: null } }),
    step: async (action: string, options?: StepOptions) => (calls.push(['step', action, options]), { observation: `${id} ${action}`, reward: 0, terminated: false, truncated: false, info: { actionExecuted: true, exitCode: 0, durationMs: 0, events: [] } }),
    peekScore: async (submission?: string) => (calls.push(['peek', submission]), { reward: 0.5, parts: {}, details: {} }),
    goldDurationMs: async (task: Task) => (calls.push(['gold', task.id]), 42),
    close: async () => void calls.push(['close']),
  };
  return forkable ? Object.assign(env, { fork: async (n: number) => (calls.push(['fork', n]), [] as TaskEnv[]) }) : env;
}

describe('TaskEnvWrapper', () => {
  it('a wrapper that overrides nothing passes every call on, with its arguments (a step\'s signal too)', async () => {
    const inner = recordingEnv('a', false);
    const wrapper = new TaskEnvWrapper(inner);
    const signal = new AbortController().signal;
    expect(wrapper.id).toBe('a');
    expect(wrapper.tasks).toBe(inner.tasks);
    expect(await wrapper.reset({ task: 0 })).toMatchObject({ observation: 'a reset' });
    expect(await wrapper.step('ls', { signal })).toMatchObject({ observation: 'a ls' });
    expect(await wrapper.peekScore('f')).toEqual({ reward: 0.5, parts: {}, details: {} });
    expect(await wrapper.goldDurationMs(TASK)).toBe(42);
    await wrapper.close();
    expect(inner.calls).toEqual([['reset', { task: 0 }], ['step', 'ls', { signal }], ['peek', 'f'], ['gold', 't0'], ['close']]);
  });

  it('a plain wrapper is not forkable; a forking one passes forks on, or refuses as CHECKPOINT_UNSUPPORTED', async () => {
    expect(isForkable(new TaskEnvWrapper(recordingEnv('a', true)))).toBe(false);
    const inner = recordingEnv('b', true);
    const forking = new ForkingTaskEnvWrapper(inner);
    expect(isForkable(forking)).toBe(true);
    await (forking as ForkableEnv).fork(3);
    expect(inner.calls).toEqual([['fork', 3]]);
    const refused = await new ForkingTaskEnvWrapper(recordingEnv('c', false)).fork(1).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(CheckpointError);
    expect(refused).toMatchObject({ code: 'CHECKPOINT_UNSUPPORTED', message: expect.stringContaining('c cannot fork') });
  });

  it('an env found at each call: the wrapper follows it when it changes', async () => {
    let current: TaskEnv = recordingEnv('first', false);
    const wrapper = new TaskEnvWrapper(() => current);
    expect(wrapper.id).toBe('first');
    current = recordingEnv('second', false);
    expect(wrapper.id).toBe('second');
    expect((await wrapper.step('x')).observation).toBe('second x');
  });

  it('an env without gold durations: undefined', async () => {
    const { goldDurationMs: _kept, ...withoutDurations } = recordingEnv('d', false);
    expect(await new TaskEnvWrapper(withoutDurations).goldDurationMs(TASK)).toBeUndefined();
  });
});
