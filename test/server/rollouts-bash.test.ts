/**
 * `POST /rollouts` over real bash sandboxes on the warm pool, against the recorded model
 * (src/mock-llm) as the trainer's inference server:
 * - the example trainer (clients/python/rollout_trainer.py, Debian's python3, stdlib only)
 *   runs two steps and gets its groups with token ids and loss masks, at its policy version;
 * - episode lines carry the records as `collect` writes them, with named reward components
 *   and the policy versions the inference server stamped at the start and end;
 * - the OpenEnv observation (/ws) and MCP's submit result name the reward's parts;
 * - a second request while every slot is held is refused (CAPACITY_REACHED); a client that
 *   goes away stops its episodes, and every slot and sandbox comes back.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILTIN_BASH_TASKS, createBashEnvs } from '../../envs/bash/index.js';
import { RecordedModel, startMockServer, type MockServer } from '../../src/mock-llm/index.js';
import { EnvServer, pooledEnvSlots, type EnvSlots } from '../../src/server/index.js';
import type { TaskEnv } from '../../src/env/types.js';
import { dockerTestFile, requireEngine, skipWithoutEngine, testContainers } from '../setup/docker.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { bashPlugin } from '../../envs/bash/plugin.js';
import { startLoopbackServer, TestClient, until } from './helpers.js';
import { recordedEnvFence } from '../../envs/index.js';
import { recordedBashEpisode } from '../setup/recorded-model.js';

const { testRun, engine } = await dockerTestFile();
const SLOTS = 4;
const TRAINER = fileURLToPath(new URL('../../clients/python/rollout_trainer.py', import.meta.url));

/** Runs the example trainer with Debian's python3; resolves with its exit code and output. */
function runTrainer(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('/usr/bin/python3', [TRAINER, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const post = (server: EnvServer, body: unknown, signal?: AbortSignal) =>
  fetch(`${server.url}/rollouts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), ...(signal ? { signal } : {}) });

/** intercode_rollouts_streamed_total as GET /metrics reports it now. */
async function streamedMetric(server: EnvServer): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('intercode_rollouts_streamed_total'));
  return Number(line?.split(' ').at(-1));
}
const ndjson = (text: string) => text.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));

describe.skipIf(skipWithoutEngine(engine, 'rollout service over bash sandboxes'))('POST /rollouts over bash sandboxes', () => {
  let docker: Docker;
  let envs: TaskEnv[];
  let slots: EnvSlots;
  let server: EnvServer;
  let dir: string;
  let plain: MockServer;
  let stamping: MockServer;
  let stamp = 0;

  beforeAll(async () => {
    docker = requireEngine(engine);
    dir = await mkdtemp(join(tmpdir(), 'intercode-rollouts-'));
    const tasks = JSON.parse(readFileSync(BUILTIN_BASH_TASKS, 'utf8')) as { query: string; gold: string }[];
    // Task 0: a wrong command, then the gold; task 1: the gold at once; task 2: never solved; task 3: slow (3 s per action), never solved.
    await writeFile(
      join(dir, 'recording.json'),
      JSON.stringify({
        0: recordedBashEpisode(tasks[0]!.query, ['ls /no-such-dir', tasks[0]!.gold]),
        1: recordedBashEpisode(tasks[1]!.query, [tasks[1]!.gold]),
        2: recordedBashEpisode(tasks[2]!.query, ['echo 0']),
        3: recordedBashEpisode(tasks[3]!.query, ['sleep 3']),
      }),
    );
    const model = await RecordedModel.load(join(dir, 'recording.json'), recordedEnvFence);
    plain = await startMockServer(model, 0);
    // An inference server whose weights move on with every request it answers.
    stamping = await startMockServer(model, 0, { policyVersion: () => ++stamp });
    envs = await createBashEnvs({}, SLOTS);
    slots = pooledEnvSlots('bash', envs, { spares: 2 });
    await slots.ready();
    server = await startLoopbackServer(slots, 'intercode-bash');
  }, 300_000);

  afterAll(async () => {
    await server?.close();
    await plain?.close();
    await stamping?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
    if (docker) expect(await testContainers(docker, testRun)).toHaveLength(0);
  }, 120_000);

  it('the example trainer (Debian python3, stdlib) gets its groups with token ids and loss masks at its policy version', async () => {
    const run = await runTrainer([server.url, plain.baseUrl, 'recorded', '2']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const steps = ndjson(run.stdout);
    expect(steps).toHaveLength(2);
    steps.forEach((step, i) => {
      // 3 groups of 4; tasks 0 and 1 solved by every sample, task 2 never (its partial reward is the same for every sample).
      expect(step).toMatchObject({ step: i, policy_version: i, groups: 3, episodes: 12, versions: [[i, i]] });
      expect(step.mean_reward).toBeGreaterThanOrEqual(8 / 12);
      expect(step.mean_reward).toBeLessThan(1);
      expect(step.mean_reward).toBe(steps[0].mean_reward);
      expect(step.model_tokens).toBeGreaterThan(0);
    });
    expect(slots.inUse).toBe(0);
  }, 300_000);

  it('streams one line per episode as collect writes it: tokens, named reward components, the stamped policy versions', async () => {
    const streamedBefore = await streamedMetric(server);
    const response = await post(server, { tasks: [0, 1], samples_per_task: 2, base_url: stamping.baseUrl, model: 'recorded', tokens: 'ids', turn_limit: 3, policy_version: 100, stream: 'episode' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/x-ndjson');
    const lines = ndjson(await response.text());
    expect(lines.map((l) => l.type)).toEqual(['episode', 'episode', 'episode', 'episode', 'end']);
    expect(lines.at(-1)).toMatchObject({ type: 'end', episodes: 4, groups: 2 });
    // GET /metrics counts the episodes streamed.
    expect((await streamedMetric(server)) - streamedBefore).toBe(4);
    for (const { record } of lines.slice(0, 4)) {
      expect(record).toMatchObject({ format: 'intercode-rollout-v1', env: 'bash', reward: 1, group: null, strategy: 'tools', model: 'recorded' });
      expect(Object.keys(record.reward_components).sort()).toEqual(['answer_similarity', 'file_changes', 'file_diff']);
      expect(record.step_components).toHaveLength(record.actions.length);
      expect(record.step_components.at(-1)).toEqual(record.reward_components);
      expect(record.tokens.episode.loss_mask).toHaveLength(record.tokens.episode.token_ids.length);
      const turns = record.tokens.turns.map((t: { policy_version: number }) => t.policy_version);
      expect(record.policy_version).toEqual({ requested: 100, start: turns[0], end: turns.at(-1) });
      if (record.task_id === '0') expect(record.policy_version.end).toBeGreaterThan(record.policy_version.start);
    }
  }, 300_000);

  it('refuses a request while every slot is held, and a client that goes away stops its episodes and returns every slot and sandbox', async () => {
    const before = plain.stats.requests;
    const client = new AbortController();
    const held = post(server, { tasks: [3], samples_per_task: 8, base_url: plain.baseUrl, model: 'recorded', turn_limit: 6, parallel: SLOTS }, client.signal);
    const response = await held;
    expect(response.status).toBe(200);
    await until(() => slots.inUse === SLOTS && plain.stats.requests > before, 60_000);
    const refused = await post(server, { tasks: [1], base_url: plain.baseUrl, model: 'recorded' });
    expect(refused.status).toBe(503);
    expect(await refused.json()).toMatchObject({ code: 'CAPACITY_REACHED', retryable: true, capacity: SLOTS });
    client.abort();
    // The action in flight (sleep 3) finishes; nothing runs after it.
    await until(() => slots.inUse === 0, 30_000);
    expect(server.rollouts.stats()).toMatchObject({ cancelled: 1, active: 0 });
    const requests = plain.stats.requests;
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    expect(plain.stats.requests).toBe(requests);
    // 8 episodes of 6 turns would have asked the model 48 times.
    expect(requests - before).toBeLessThan(2 * SLOTS + 1);
    expect((await testContainers(docker, testRun, true)).length).toBeLessThanOrEqual(slots.sandboxLimit!);
    // The slots serve the next request.
    const again = ndjson(await (await post(server, { tasks: [1], base_url: plain.baseUrl, model: 'recorded' })).text());
    expect(again.map((l) => l.type)).toEqual(['group', 'end']);
    expect(again[0].records[0].reward).toBe(1);
  }, 300_000);

  it('names the reward components in the OpenEnv observation (/ws) and in MCP results', async () => {
    const task = envs[0]!.tasks[1]!;
    const gold = bashPlugin.goldActions(task)[0]!;
    const ws = new TestClient(server.url);
    await ws.opened;
    await ws.request({ type: 'reset', data: { task_id: 1 } });
    await ws.request({ type: 'step', data: { code: gold } });
    const submitted = await ws.request({ type: 'step', data: { code: 'submit' } });
    expect(submitted.data).toMatchObject({ reward: 1, done: true });
    const info = submitted.data.observation!.info as Record<string, unknown>;
    expect(info.reward_components).toEqual({ file_diff: expect.any(Number), file_changes: expect.any(Number), answer_similarity: expect.any(Number) });
    expect(info.reward_components).toEqual((info.score as { parts: unknown }).parts);
    ws.send({ type: 'close' });

    const client = new Client({ name: 'intercode-test', version: '0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`));
    await client.connect(transport);
    const text = (result: Awaited<ReturnType<Client['callTool']>>) => (result.content as { type: string; text: string }[]).map((c) => c.text);
    await client.callTool({ name: 'reset', arguments: { task_id: 1 } });
    await client.callTool({ name: 'execute', arguments: { code: gold } });
    const result = JSON.parse(text(await client.callTool({ name: 'submit', arguments: {} }))[1]!);
    expect(result).toMatchObject({ reward: 1, done: true, reward_components: info.reward_components });
    await transport.terminateSession();
    await client.close();
    await until(() => server.leases.active === 0);
  }, 120_000);
});
