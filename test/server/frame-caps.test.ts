/**
 * The server's frames capped in bytes, over real bash sandboxes, with `--max-message-bytes`
 * 16 KiB: an oversize message or body in (WebSocket, HTTP, MCP, OpenEnv's dialect) gets a typed
 * refusal and the server and the session live on; an oversize frame out (a command printing
 * more than the cap, a gold episode scored after it) is cut to the cap with
 * `info.output_truncated`, its reward and done kept, on every transport.
 */
import type Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bashPlugin } from '../../envs/bash/plugin.js';
import type { BashEnv } from '../../envs/bash/bash-env.js';
import { createBashEnvs } from '../../envs/bash/index.js';
import { EnvServer, pooledEnvSlots } from '../../src/server/index.js';
import { replyCap } from '../../src/server/env-server.js';
import { dockerTestFile, requireEngine, skipWithoutEngine, testContainers } from '../setup/docker.js';
import { TestClient, startLoopbackServer, until } from './helpers.js';

const { testRun, engine } = await dockerTestFile();
const LIMIT = 16 * 1024;
/** Prints about 48 KB: under bash's own 64 KiB cap, over the server's. */
const LOUD = 'seq 1 9000';

describe.skipIf(skipWithoutEngine(engine, 'server frame caps'))('server frames capped in bytes (bash sandboxes)', () => {
  let docker: Docker;
  let envs: BashEnv[];
  let server: EnvServer;
  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${server.url}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });

  beforeAll(async () => {
    docker = requireEngine(engine);
    envs = await createBashEnvs({}, 2);
    const slots = pooledEnvSlots('bash', envs, { spares: 1 });
    await slots.ready();
    server = await startLoopbackServer(slots, 'intercode-bash', { maxMessageBytes: LIMIT });
  }, 600_000);

  afterAll(async () => {
    await server?.close();
    if (docker) expect(await testContainers(docker, testRun, true)).toEqual([]);
  });

  it('an oversize message in gets a typed refusal on every transport; the server and the session live on', async () => {
    const big = 'x'.repeat(LIMIT + 1);
    const client = new TestClient(server.url);
    await client.opened;
    expect((await client.request({ type: 'reset', data: { task_id: 0 } })).type).toBe('observation');
    expect((await client.request({ type: 'step', data: { code: `echo ${big}` } })).data).toMatchObject({ code: 'VALIDATION_ERROR', limit_bytes: LIMIT, retryable: false });
    const [gold] = bashPlugin.goldActions(envs[0]!.tasks[0]!);
    expect((await client.request({ type: 'step', data: { code: gold } })).type).toBe('observation');
    expect((await client.request({ type: 'step', data: { code: 'submit' } })).data).toMatchObject({ reward: 1, done: true });
    // Past 4x the limit the frame is not even buffered: the connection closes 1009, its slot comes back.
    client.send({ type: 'step', data: { code: 'x'.repeat(4 * LIMIT + 1) } });
    expect((await client.closed).code).toBe(1009);
    await until(() => server.leases.active === 0);
    const step = await post('/step', JSON.stringify({ action: { code: big } }));
    expect(step.status).toBe(413);
    expect(await step.json()).toMatchObject({ code: 'VALIDATION_ERROR', limit_bytes: LIMIT });
    const mcp = await post('/mcp', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'execute', arguments: { code: big } } }));
    expect(mcp.status).toBe(413);
    expect(await mcp.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32600, data: { code: 'VALIDATION_ERROR', limit_bytes: LIMIT } } });
    expect(await (await fetch(`${server.url}/health`)).json()).toMatchObject({ status: 'healthy', active_sessions: 0 });
  }, 120_000);

  it('an oversize frame out is cut to the cap with output_truncated, reward and done kept, on /ws, /step, MCP and OpenEnv tool calls', async () => {
    const client = new TestClient(server.url);
    await client.opened;
    let frame = '';
    client.ws.on('message', (data) => (frame = String(data)));
    expect((await client.request({ type: 'reset', data: { task_id: 0 } })).type).toBe('observation');
    const loud = await client.request({ type: 'step', data: { code: LOUD } });
    expect(Buffer.byteLength(frame)).toBeLessThanOrEqual(LIMIT);
    expect(loud.data.observation!.output).toMatch(/^1\n2\n3\n/);
    expect(loud.data.observation!.info).toMatchObject({ output_truncated: { limit_bytes: replyCap(LIMIT) } });
    expect((loud.data.observation!.info as { output_truncated: { original_bytes: number } }).output_truncated.original_bytes).toBeGreaterThan(LIMIT);
    expect(loud.data).toMatchObject({ reward: 0, done: false });
    // The tool-calling step action carries the output twice (content and data): within the cap too.
    const tool = await client.request({ type: 'step', data: { type: 'call_tool', tool_name: 'execute', arguments: { code: LOUD } } });
    expect(Buffer.byteLength(frame)).toBeLessThanOrEqual(LIMIT);
    expect(tool.data.observation).toMatchObject({ tool_name: 'execute', error: null });
    client.send({ type: 'close' });
    const http = await post('/step', JSON.stringify({ task_id: 0, action: { code: LOUD } }));
    const httpText = await http.text();
    expect(Buffer.byteLength(httpText)).toBeLessThanOrEqual(LIMIT);
    expect(JSON.parse(httpText)).toMatchObject({ observation: { info: { output_truncated: { limit_bytes: replyCap(LIMIT) } } } });
    const session = (await (await post('/mcp', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'openenv/session/create' }))).json()) as { result: { session_id: string } };
    const call = (name: string, args: object) => post('/mcp', JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name, arguments: args, session_id: session.result.session_id } }));
    await call('reset', { task_id: 0 });
    const rpcText = await (await call('execute', { code: LOUD })).text();
    expect(Buffer.byteLength(rpcText)).toBeLessThanOrEqual(LIMIT);
    expect(JSON.parse(rpcText)).toMatchObject({ result: { data: { done: false, info: { output_truncated: {} } } } });
    await post('/mcp', JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'openenv/session/close', params: { session_id: session.result.session_id } }));
    await until(() => server.leases.active === 0);
  }, 120_000);
});
