/**
 * `POST /rollouts` without Docker (scripted envs, the recorded model over HTTP): every bad
 * field is refused with 422 naming it, before any env slot is held; a request that asks for
 * more parallel episodes than there are free slots is refused with CAPACITY_REACHED; a
 * model server that fails ends the stream with a typed error line; the scripted episodes
 * stream as groups with their policy version.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RecordedModel, startMockServer, type MockServer } from '../../src/mock-llm/index.js';
import type { EnvServer, EnvSlots } from '../../src/server/index.js';
import { parseRolloutRequest } from '../../src/server/rollouts/index.js';
import { WireError } from '../../src/server/protocol.js';
import { ScriptedEnv, startLoopbackServer, tasks } from './helpers.js';
import { recordedEnvFence } from '../../envs/index.js';

/** Slots over scripted envs (no sandboxes). */
function scriptedSlots(n: number): EnvSlots & { taken: number } {
  const free = Array.from({ length: n }, () => new ScriptedEnv());
  const state = {
    envName: 'bash',
    capacity: n,
    sandboxLimit: undefined,
    taken: 0,
    get inUse() {
      return n - free.length;
    },
    take() {
      const env = free.pop();
      if (env) state.taken += 1;
      return env;
    },
    async give(env: ScriptedEnv) {
      free.push(env);
    },
    sandboxes: () => undefined,
    ready: async () => {},
    close: async () => {},
  };
  return state as unknown as EnvSlots & { taken: number };
}

const BASE = { tasks: [0], base_url: 'http://127.0.0.1:9/v1', model: 'm' };

describe('rollout requests', () => {
  it.each([
    [{}, 'tasks'],
    [{ ...BASE, tasks: [] }, 'tasks'],
    [{ ...BASE, tasks: [3] }, 'tasks[0]'],
    [{ ...BASE, tasks: [1, 1] }, 'tasks'],
    [{ ...BASE, base_url: 'file:///etc/passwd' }, 'base_url'],
    [{ ...BASE, model: '' }, 'model'],
    [{ ...BASE, samples_per_task: 0 }, 'samples_per_task'],
    [{ ...BASE, samples_per_task: 10_000, tasks: [0, 1] }, 'samples_per_task'],
    [{ ...BASE, temperature: 3 }, 'temperature'],
    [{ ...BASE, strategy: 'magic' }, 'strategy'],
    [{ ...BASE, tokens: 'all' }, 'tokens'],
    [{ ...BASE, format: 'parquet' }, 'format'],
    [{ ...BASE, stream: 'task' }, 'stream'],
    [{ ...BASE, turn_limit: 0 }, 'turn_limit'],
    [{ ...BASE, policy_version: { v: 1 } }, 'policy_version'],
    [{ ...BASE, parallel: 0 }, 'parallel'],
    [{ ...BASE, turns: 3 }, 'turns'],
  ])('refuses %j naming %s', (body, field) => {
    let error: unknown;
    try {
      parseRolloutRequest(body, tasks.length);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(WireError);
    expect(error).toMatchObject({ code: 'VALIDATION_ERROR', extra: { field } });
  });

  it('fills in the defaults of collect', () => {
    expect(parseRolloutRequest({ ...BASE, policy_version: 'step-7' }, tasks.length)).toMatchObject({
      samplesPerTask: 1, temperature: 1, tokens: 'logprobs', strategy: 'tools', turnLimit: 10, format: 'jsonl', stream: 'group', policyVersion: 'step-7', parallel: undefined,
    });
  });
});

describe('POST /rollouts over scripted envs', () => {
  let dir: string;
  let model: MockServer;
  let slots: EnvSlots & { taken: number };
  let server: EnvServer;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'intercode-rollouts-scripted-'));
    const episode = (query: string, actions: string[]) => ({
      environment: 'ic_bash', query, turn_history: { actions, observations: actions.map(() => ''), rewards: actions.map(() => 0), valid_action: actions.map(() => true) }, summary: { max_reward: 0 },
    });
    await writeFile(join(dir, 'rec.json'), JSON.stringify({ 0: episode('query 0', ['gold 0']), 1: episode('query 1', ['echo no', 'submit']) }));
    model = await startMockServer(await RecordedModel.load(join(dir, 'rec.json'), recordedEnvFence), 0, { policyVersion: () => 'w3' });
    slots = scriptedSlots(2);
    server = await startLoopbackServer(slots, 'intercode-scripted');
  });
  afterAll(async () => {
    await server?.close();
    await model?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const post = (body: unknown, method = 'POST') =>
    fetch(`${server.url}/rollouts`, { method, headers: { 'content-type': 'application/json' }, ...(method === 'POST' ? { body: JSON.stringify(body) } : {}) });
  const lines = async (response: Response) => (await response.text()).split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));

  it('answers a bad field with 422 naming it and gives its slot back', async () => {
    const response = await post({ ...BASE, temperature: -1 });
    expect(response.status).toBe(422);
    expect(await response.json()).toMatchObject({ code: 'VALIDATION_ERROR', field: 'temperature', retryable: false });
    expect((await post(BASE, 'GET')).status).toBe(405);
    const huge = await post({ ...BASE, model: 'x'.repeat(2 * 1024 * 1024) });
    expect(huge.status).toBe(413);
    expect(await huge.json()).toMatchObject({ code: 'VALIDATION_ERROR', limit_bytes: 1024 * 1024 });
    expect(slots.inUse).toBe(0);
  });

  it('refuses more parallel episodes than free slots with CAPACITY_REACHED', async () => {
    const response = await post({ ...BASE, tasks: [0, 1], samples_per_task: 2, parallel: 3 });
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ code: 'CAPACITY_REACHED', retryable: true, capacity: 2 });
    expect(slots.inUse).toBe(0);
    expect(server.rollouts.stats().refused).toBe(1);
  });

  it('streams K samples of each task as groups, with rewards, advantages and the stamped policy version', async () => {
    const response = await post({ ...BASE, base_url: model.baseUrl, model: 'recorded', tasks: [0, 1], samples_per_task: 3, policy_version: 'w2', format: 'hf-messages' });
    expect(response.status).toBe(200);
    const out = await lines(response);
    expect(out.map((l) => l.type)).toEqual(['group', 'group', 'end']);
    const byTask = Object.fromEntries(out.slice(0, 2).map((l) => [l.task_id, l.records]));
    expect(byTask['0'].map((r: { reward: number }) => r.reward)).toEqual([1, 1, 1]);
    expect(byTask['1'].map((r: { reward: number }) => r.reward)).toEqual([0, 0, 0]);
    for (const r of [...byTask['0'], ...byTask['1']]) {
      expect(r).toMatchObject({ group_size: 3, advantage: 0, policy_version: { requested: 'w2', start: 'w3', end: 'w3' } });
    }
    expect(slots.inUse).toBe(0);
  });

  it('ends the stream with a typed error line when the model server cannot be reached', async () => {
    const out = await lines(await post({ ...BASE, retries: 0, request_timeout_s: 2 }));
    expect(out).toEqual([{ type: 'error', code: 'MODEL_UNAVAILABLE', message: expect.stringContaining('127.0.0.1:9'), retryable: true }]);
    expect(slots.inUse).toBe(0);
  });
});
