/**
 * OpenEnv's MCP JSON-RPC dialect and tool actions against a hostile client, over real bash
 * sandboxes: tool names that are properties of every JS object (`constructor`, `__proto__`,
 * `toString`) are no tools; HTTP sessions count against capacity, idle out, and close only by
 * their own id; a /ws session cannot close itself through the dialect.
 */
import type Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bashPlugin } from '../../envs/bash/plugin.js';
import type { BashEnv } from '../../envs/bash/bash-env.js';
import { createBashEnvs } from '../../envs/bash/index.js';
import { EnvServer, pooledEnvSlots } from '../../src/server/index.js';
import { dockerTestFile, requireEngine, skipWithoutEngine, testContainers } from '../setup/docker.js';
import { TestClient, startLoopbackServer, until } from './helpers.js';

const { testRun, engine } = await dockerTestFile();

describe.skipIf(skipWithoutEngine(engine, 'OpenEnv dialect, hostile'))('OpenEnv MCP dialect against a hostile client (bash sandboxes)', () => {
  let docker: Docker;
  let envs: BashEnv[];
  let server: EnvServer;
  let id = 0;
  const rpc = async (method: string, params: Record<string, unknown> = {}) =>
    (await (await fetch(`${server.url}/mcp`, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }), headers: { 'content-type': 'application/json' } })).json()) as {
      result?: { session_id?: string; data?: { output: string; reward: number | null; done: boolean } };
      error?: { code: number; message: string; data?: { code: string } };
    };

  beforeAll(async () => {
    docker = requireEngine(engine);
    envs = await createBashEnvs({}, 2);
    const slots = pooledEnvSlots('bash', envs, { spares: 1 });
    await slots.ready();
    server = await startLoopbackServer(slots, 'intercode-bash', { idleTimeoutMs: 1_500 });
  }, 600_000);

  afterAll(async () => {
    await server?.close();
    if (docker) expect(await testContainers(docker, testRun, true)).toEqual([]);
  });

  it('a tool name that every JS object has (constructor, __proto__, toString, hasOwnProperty) is no tool: nothing runs, the episode goes on', async () => {
    const session = (await rpc('openenv/session/create')).result!.session_id!;
    const task = envs[0]!.tasks[0]!;
    expect((await rpc('tools/call', { session_id: session, name: 'reset', arguments: { task_id: 0 } })).result!.data!.output).toBe(task.query);
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) {
      const reply = await rpc('tools/call', { session_id: session, name, arguments: {} });
      expect(reply.error, name).toMatchObject({ code: -32000, data: { code: 'VALIDATION_ERROR' } });
      expect(reply.error!.message, name).toMatch(/^no tool /);
    }
    // Over /ws too, as step actions.
    const client = new TestClient(server.url);
    await client.opened;
    await client.request({ type: 'reset', data: { task_id: 0 } });
    for (const name of ['constructor', '__proto__', 'toString']) {
      const reply = await client.request({ type: 'step', data: { type: 'call_tool', tool_name: name, arguments: {} } });
      expect(reply.data.observation, name).toMatchObject({ error: { error_type: 'tool_not_found' }, result: null });
      expect(reply.data.done, name).toBe(false);
    }
    client.send({ type: 'close' });
    // The HTTP session's episode was not ended by any of them: the gold still scores 1.
    const [gold] = bashPlugin.goldActions(task);
    expect((await rpc('tools/call', { session_id: session, name: 'execute', arguments: { code: gold } })).result!.data).toMatchObject({ done: false });
    expect((await rpc('tools/call', { session_id: session, name: 'submit', arguments: {} })).result!.data).toMatchObject({ reward: 1, done: true });
    expect((await rpc('openenv/session/close', { session_id: session })).result).toEqual({ session_id: session, closed: true });
    await until(() => server.leases.active === 0);
  }, 120_000);

  it('HTTP sessions hold capacity, idle out, and close only by their own id; a /ws session cannot close itself through the dialect', async () => {
    const first = (await rpc('openenv/session/create')).result!.session_id!;
    const second = (await rpc('openenv/session/create')).result!.session_id!;
    expect(await rpc('openenv/session/create')).toMatchObject({ error: { code: -32000, message: 'all 2 sessions are in use (CAPACITY_REACHED)', data: { code: 'CAPACITY_REACHED' } } });
    // A stateless call needs a slot too.
    expect((await rpc('tools/call', { name: 'reset', arguments: {} })).error).toMatchObject({ data: { code: 'CAPACITY_REACHED' } });
    expect((await rpc('openenv/session/close', { session_id: 'not-a-session' })).error).toMatchObject({ code: -32602 });
    expect((await rpc('tools/call', { session_id: 'not-a-session', name: 'reset', arguments: {} })).error).toMatchObject({ code: -32602 });
    expect((await rpc('openenv/session/close', { session_id: first })).result).toEqual({ session_id: first, closed: true });
    expect((await rpc('tools/call', { session_id: first, name: 'reset', arguments: {} })).error).toMatchObject({ code: -32602 });
    // The other one idles out (1.5 s) and its id is then unknown.
    await until(() => server.leases.active === 0, 10_000);
    expect((await rpc('tools/call', { session_id: second, name: 'reset', arguments: {} })).error).toMatchObject({ code: -32602 });
    const client = new TestClient(server.url);
    await client.opened;
    const own = (await client.request({ type: 'mcp', data: { jsonrpc: '2.0', id: 1, method: 'openenv/session/create' } })).data as { result: { session_id: string } };
    expect((await client.request({ type: 'mcp', data: { jsonrpc: '2.0', id: 2, method: 'openenv/session/close', params: { session_id: own.result.session_id } } })).data).toMatchObject({ error: { code: -32600 } });
    expect((await client.request({ type: 'reset', data: { task_id: 0 } })).type).toBe('observation');
    client.send({ type: 'close' });
    await until(() => server.leases.active === 0);
  }, 120_000);
});
