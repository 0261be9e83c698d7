/**
 * The server over a scripted env (no Docker): OpenEnv's shapes on every route, and every
 * hostile input a client controls — not JSON, unknown types, steps out of order, oversized
 * messages, wrong tokens, too many sessions, idle and half-open connections — each gets
 * its typed error, nothing crashes, and every slot comes back.
 */
import { connect } from 'node:net';
import { WebSocket } from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { EnvServer, pooledEnvSlots, type EnvServerOptions } from '../../src/server/index.js';
import { ScriptedEnv, TestClient, until, startLoopbackServer } from './helpers.js';

const TOKEN = 'correct-horse-battery';
let servers: EnvServer[] = [];

async function start(options: Partial<EnvServerOptions> & { sessions?: number } = {}): Promise<{ server: EnvServer; envs: ScriptedEnv[] }> {
  const envs = Array.from({ length: options.sessions ?? 4 }, () => new ScriptedEnv());
  const server = await startLoopbackServer(pooledEnvSlots('scripted', envs), 'intercode-scripted', { heartbeatMs: 60_000, maxMessageBytes: 4096, log: () => undefined, ...options });
  servers.push(server);
  return { server, envs };
}

afterEach(async () => {
  await Promise.all(servers.map((server) => server.close()));
  servers = [];
});

const post = (url: string, body: string, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });

describe('OpenEnv HTTP routes', () => {
  it('serves health, schema, metadata and a stateless state', async () => {
    const { server } = await start();
    expect(await (await fetch(`${server.url}/health`)).json()).toEqual({ status: 'healthy', active_sessions: 0, max_sessions: 4 });
    const schema = (await (await fetch(`${server.url}/schema`)).json()) as Record<string, { oneOf: { title: string; required: string[]; properties: object }[] }>;
    expect(Object.keys(schema)).toEqual(['action', 'observation', 'state']);
    // What a step admits: a command with OpenEnv's Action metadata, or one of its tool actions.
    expect(schema.action!.oneOf.map((a) => [a.title, a.required, Object.keys(a.properties)])).toEqual([
      ['CodeAction', ['code'], ['code', 'metadata']],
      ['ListToolsAction', ['type'], ['type', 'metadata']],
      ['CallToolAction', ['type', 'tool_name'], ['type', 'tool_name', 'arguments', 'metadata']],
    ]);
    expect(await (await fetch(`${server.url}/metadata`)).json()).toMatchObject({ name: 'intercode-scripted', version: '0' });
    expect(await (await fetch(`${server.url}/state`)).json()).toEqual({ episode_id: null, step_count: 0, env: 'scripted', task_id: null });
  });

  it('/openapi.json lists every route it serves: each listed path and method answers (no 404, no 405), and an unlisted path is 404', async () => {
    const { server } = await start();
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as { openapi: string; info: { version: string }; paths: Record<string, Record<string, unknown>> };
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('1.0.0');
    const listed = Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).map((method) => [method.toUpperCase(), path] as const));
    expect(listed.map(([method, path]) => `${method} ${path}`).sort()).toEqual(
      ['GET /health', 'GET /metadata', 'GET /schema', 'GET /state', 'POST /reset', 'POST /step', 'POST /mcp', 'DELETE /mcp', 'GET /metrics', 'GET /openapi.json', 'POST /rollouts'].sort(),
    );
    for (const [method, path] of listed) {
      const body = method === 'POST' ? (path === '/step' ? JSON.stringify({ action: { code: 'ls' } }) : '{}') : undefined;
      const status = (await fetch(`${server.url}${path}`, { method, body, headers: { 'content-type': 'application/json' } })).status;
      expect([404, 405], `${method} ${path} answered ${status}`).not.toContain(status);
    }
    expect((await fetch(`${server.url}/openapi.yaml`)).status).toBe(404);
    expect((await post(`${server.url}/metrics`, '{}')).status).toBe(405);
  });

  it('refuses --max-message-bytes under 4096 (no room for a capped reply)', async () => {
    await expect(start({ maxMessageBytes: 4095 })).rejects.toThrow(ConfigError);
  });

  it('POST /reset and /step each use an env of their own and give it back', async () => {
    const { server } = await start();
    const reset = await post(`${server.url}/reset`, JSON.stringify({ task_id: 2 }));
    expect(await reset.json()).toEqual({
      observation: { output: 'query 2', exit_code: null, task: { task_id: 2, query: 'query 2' }, info: {} },
      reward: null,
      done: false,
    });
    const step = await post(`${server.url}/step`, JSON.stringify({ action: { code: 'echo' }, task_id: 1 }));
    expect(await step.json()).toMatchObject({ observation: { output: 'ran echo', exit_code: 0, task: { task_id: 1 } }, reward: 0, done: false });
    expect(server.leases.active).toBe(0);
  });

  it('answers bad requests with OpenEnv\'s statuses and typed bodies', async () => {
    const { server } = await start();
    const bad = async (response: Promise<Response>) => {
      const r = await response;
      return { status: r.status, code: ((await r.json()) as { code: string }).code };
    };
    expect(await bad(post(`${server.url}/step`, JSON.stringify({ action: { cmd: 'ls' } })))).toEqual({ status: 422, code: 'VALIDATION_ERROR' });
    expect(await bad(post(`${server.url}/step`, '{not json'))).toEqual({ status: 422, code: 'INVALID_JSON' });
    expect(await bad(post(`${server.url}/reset`, JSON.stringify({ task_id: 99 })))).toEqual({ status: 422, code: 'VALIDATION_ERROR' });
    expect(await bad(post(`${server.url}/reset`, JSON.stringify({ seed: -1 })))).toEqual({ status: 422, code: 'VALIDATION_ERROR' });
    expect(await bad(post(`${server.url}/reset`, JSON.stringify({ episode_id: 'x'.repeat(256) })))).toEqual({ status: 422, code: 'VALIDATION_ERROR' });
    expect(await bad(post(`${server.url}/reset`, 'x'.repeat(5000)))).toEqual({ status: 413, code: 'VALIDATION_ERROR' });
    expect(await bad(fetch(`${server.url}/reset`))).toEqual({ status: 405, code: 'VALIDATION_ERROR' });
    expect(await bad(fetch(`${server.url}/nope`))).toEqual({ status: 404, code: 'NOT_FOUND' });
    expect(server.leases.active).toBe(0);
  });

  it('a request target that is no URL gets an answer on both paths, and the server lives on', async () => {
    const { server } = await start({ token: 'secret-token-1' });
    const raw = (request: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(server.port, '127.0.0.1');
        let answer = '';
        socket.on('data', (chunk) => (answer += chunk.toString()));
        socket.on('end', () => resolve(answer));
        socket.on('close', () => resolve(answer));
        socket.on('error', reject);
        socket.write(request);
      });
    const plain = await raw('GET http://[ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    expect(plain).toMatch(/^HTTP\/1\.1 401 /);
    const upgrade = await raw('GET http://[ HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==\r\nSec-WebSocket-Version: 13\r\n\r\n');
    expect(upgrade).toMatch(/^HTTP\/1\.1 404 /);
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
  });

  it('refuses to listen beyond loopback without a token', async () => {
    await expect(start({ host: '0.0.0.0' })).rejects.toThrow(ConfigError);
    await expect(start({ host: '0.0.0.0' })).rejects.toThrow(/needs --token/);
    await expect(start({ token: 'short' })).rejects.toThrow(/at least 8/);
  });
});

describe('WebSocket sessions', () => {
  it('plays an episode: reset, step, submit with the reward beside the observation, state', async () => {
    const { server } = await start();
    const client = new TestClient(server.url);
    await client.opened;
    const reset = await client.request({ type: 'reset', data: { task_id: 1, episode_id: 'ep-1' } });
    expect(reset).toEqual({ type: 'observation', data: { observation: { output: 'query 1', exit_code: null, task: { task_id: 1, query: 'query 1' }, info: {} }, reward: null, done: false } });
    expect((await client.request({ type: 'step', data: { code: 'gold 1' } })).data).toMatchObject({ reward: 0, done: false });
    const end = await client.request({ type: 'step', data: { code: 'submit' } });
    expect(end.data).toMatchObject({ reward: 1, done: true, observation: { info: { terminated: true, truncated: false } } });
    expect(await client.request({ type: 'state' })).toEqual({ type: 'state', data: { episode_id: 'ep-1', step_count: 2, env: 'scripted', task_id: 1 } });
    client.send({ type: 'close' });
    expect((await client.closed).code).toBe(1000);
    await until(() => server.leases.active === 0);
  });

  it('draws the same task from the same seed', async () => {
    const { server } = await start();
    const client = new TestClient(server.url);
    await client.opened;
    const ids = [];
    for (const seed of [7, 7, 8, 7]) ids.push(((await client.request({ type: 'reset', data: { seed } })).data.observation!.task as { task_id: number }).task_id);
    expect(ids[0]).toBe(ids[1]);
    expect(ids[3]).toBe(ids[0]);
    client.ws.close();
  });

  it('gives each bad message its typed error and the session stays usable', async () => {
    const { server } = await start();
    const client = new TestClient(server.url);
    await client.opened;
    const code = async (message: unknown) => (await client.request(message)).data.code;
    expect(await code('{"type": "reset", ')).toBe('INVALID_JSON');
    expect(await code('[1, 2]')).toBe('INVALID_JSON');
    expect(await code('null')).toBe('INVALID_JSON');
    expect(await code({ type: 'launch' })).toBe('UNKNOWN_TYPE');
    expect(await code({ data: {} })).toBe('UNKNOWN_TYPE');
    expect(await code({ type: 'step', data: { code: 'ls' } })).toBe('SESSION_ERROR'); // before reset
    expect(await code({ type: 'step', data: { action: 'ls' } })).toBe('VALIDATION_ERROR');
    expect(await code({ type: 'step', data: { code: 42 } })).toBe('VALIDATION_ERROR');
    expect(await code({ type: 'reset', data: { task_id: 3 } })).toBe('VALIDATION_ERROR');
    expect(await code({ type: 'reset', data: { task_id: 1.5 } })).toBe('VALIDATION_ERROR');
    expect(await code({ type: 'reset', data: 'task 1' })).toBe('VALIDATION_ERROR');
    // What /schema does not admit is refused, as OpenEnv's Action (extra="forbid") refuses it.
    expect(await code({ type: 'step', data: { code: 'ls', metadata: {}, extra: 1 } })).toBe('VALIDATION_ERROR');
    expect(await code({ type: 'step', data: { code: 'ls', metadata: 'x' } })).toBe('VALIDATION_ERROR');
    expect(await code({ type: 'step', data: { type: 'call_tool' } })).toBe('VALIDATION_ERROR');
    expect(await code({ type: 'step', data: { type: 'launch' } })).toBe('VALIDATION_ERROR');
    // OpenEnv's MCP JSON-RPC over the session: a JSON-RPC answer, an error included.
    expect(await client.request({ type: 'mcp', data: { jsonrpc: '2.0', method: 'tools/list', id: 1 } })).toMatchObject({ type: 'mcp', data: { id: 1, result: { tools: [{ name: 'reset' }, { name: 'execute' }, { name: 'submit' }] } } });
    expect(await client.request({ type: 'mcp', data: { jsonrpc: '2.0', method: 'nope', id: 2 } })).toMatchObject({ type: 'mcp', data: { id: 2, error: { code: -32601 } } });
    expect(await client.request({ type: 'mcp', data: 'x' })).toMatchObject({ type: 'mcp', data: { id: null, error: { code: -32600 } } });
    const oversized = await client.request({ type: 'step', data: { code: 'x'.repeat(5000) } });
    expect(oversized.data).toMatchObject({ code: 'VALIDATION_ERROR', limit_bytes: 4096 });
    expect(oversized.data.message).toMatch(/the limit is 4096 \(--max-message-bytes\)/);
    // Still usable: a whole episode after all that.
    expect((await client.request({ type: 'reset', data: { task_id: 0 } })).type).toBe('observation');
    expect((await client.request({ type: 'step', data: { code: 'crash' } })).data).toMatchObject({ code: 'EXECUTION_ERROR', retryable: true });
    expect((await client.request({ type: 'step', data: { code: 'gold 0' } })).type).toBe('observation');
    expect((await client.request({ type: 'step', data: { code: 'submit' } })).data).toMatchObject({ reward: 1, done: true });
    expect(await code({ type: 'step', data: { code: 'ls' } })).toBe('SESSION_ERROR'); // after done
    client.ws.close();
  });

  it('closes the connection (1009) on a frame past 4× the limit, and frees the session', async () => {
    const { server } = await start();
    const client = new TestClient(server.url);
    await client.opened;
    client.send('x'.repeat(4096 * 4 + 1));
    expect((await client.closed).code).toBe(1009);
    await until(() => server.leases.active === 0);
  });

  it('reports a lost sandbox as a done observation with the cause, never a crash', async () => {
    const { server } = await start();
    const client = new TestClient(server.url);
    await client.opened;
    await client.request({ type: 'reset', data: {} });
    const lost = await client.request({ type: 'step', data: { code: 'lose' } });
    expect(lost.data).toMatchObject({ done: true, reward: 0, observation: { info: { truncated: true, truncation: { reason: 'sandbox-lost', message: 'container died' } } } });
    expect((await client.request({ type: 'reset', data: {} })).type).toBe('observation');
    client.ws.close();
  });

  it('answers a reset that gets no sandbox with FACTORY_ERROR (retryable)', async () => {
    const { server, envs } = await start({ sessions: 1 });
    envs[0]!.failResets = true;
    const client = new TestClient(server.url);
    await client.opened;
    expect((await client.request({ type: 'reset', data: {} })).data).toMatchObject({ code: 'FACTORY_ERROR', retryable: true, cause_code: 'SANDBOX_UNAVAILABLE' });
    envs[0]!.failResets = false;
    expect((await client.request({ type: 'reset', data: {} })).type).toBe('observation');
    client.ws.close();
  });

  it('runs a session\'s requests in order and refuses a flood beyond the queue', async () => {
    const { server } = await start();
    const client = new TestClient(server.url);
    await client.opened;
    await client.request({ type: 'reset', data: {} });
    for (let i = 0; i < 12; i++) client.send({ type: 'step', data: { code: i === 0 ? 'sleep 200' : `a${i}` } });
    const replies = await Promise.all(Array.from({ length: 12 }, () => client.next()));
    const refused = replies.filter((r) => r.type === 'error');
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every((r) => r.data.code === 'SESSION_ERROR')).toBe(true);
    const outputs = replies.filter((r) => r.type === 'observation').map((r) => r.data.observation!.output);
    expect(outputs[0]).toBe('ran sleep 200');
    expect(outputs).toEqual([...outputs].sort((a, b) => Number(String(a).slice(5)) - Number(String(b).slice(5))));
    client.ws.close();
  });

  it('refuses the session past --max-sessions with CAPACITY_REACHED and its counts, then has room again', async () => {
    const { server } = await start({ sessions: 2 });
    const a = new TestClient(server.url);
    const b = new TestClient(server.url);
    await Promise.all([a.opened, b.opened]);
    const c = new TestClient(server.url);
    await c.opened;
    expect(await c.next()).toEqual({
      type: 'error',
      data: { code: 'CAPACITY_REACHED', active_sessions: 2, max_sessions: 2, retryable: true, message: 'all 2 sessions are in use' },
    });
    expect((await c.closed).code).toBe(1013);
    a.ws.terminate();
    await until(() => server.leases.active === 1);
    const d = new TestClient(server.url);
    await d.opened;
    expect((await d.request({ type: 'reset', data: {} })).type).toBe('observation');
    b.ws.close();
    d.ws.close();
  });

  it('ends an idle session (SESSION_ERROR, close 4000) and returns its slot', async () => {
    const { server } = await start({ idleTimeoutMs: 150 });
    const client = new TestClient(server.url);
    await client.opened;
    await client.request({ type: 'reset', data: {} });
    expect((await client.next()).data.code).toBe('SESSION_ERROR');
    expect(await client.closed).toEqual({ code: 4000, reason: 'idle timeout' });
    await until(() => server.leases.active === 0);
    expect(server.leases.stats().ended.idle).toBe(1);
  });

  it('does not idle out a session whose step is still running', async () => {
    const { server } = await start({ idleTimeoutMs: 100 });
    const client = new TestClient(server.url);
    await client.opened;
    await client.request({ type: 'reset', data: {} });
    expect((await client.request({ type: 'step', data: { code: 'sleep 400' } })).data.observation!.output).toBe('ran sleep 400');
    client.ws.close();
  });

  it('drops a half-open connection (no pong) on the heartbeat and frees its slot', async () => {
    const { server } = await start({ heartbeatMs: 100, sessions: 1 });
    // A raw client that completes the upgrade and then never reads or answers again.
    const socket = connect(server.port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(
      'GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
    );
    await until(() => server.leases.active === 1);
    socket.pause();
    await until(() => server.leases.active === 0, 5_000);
    expect(server.leases.stats().ended.drop).toBe(1);
    socket.destroy();
    const client = new TestClient(server.url);
    await client.opened;
    expect((await client.request({ type: 'reset', data: {} })).type).toBe('observation');
    client.ws.close();
  });

  it('keeps a live client whose pong this process read late (busy past an interval): a heartbeat is a dead peer only after two unanswered pings', async () => {
    const { server } = await start({ heartbeatMs: 100, sessions: 1 });
    const client = new TestClient(server.url);
    await client.opened;
    await client.request({ type: 'reset', data: {} });
    // The client answers the ping at once (ws sends the pong before the 'ping' event); then
    // this process is busy for 3.5 intervals, so the server's timer runs before it reads the pong.
    let busy = 0;
    client.ws.on('ping', () => {
      if (busy++ > 0) return;
      const until = Date.now() + 350;
      while (Date.now() < until);
    });
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(busy).toBeGreaterThan(1);
    expect(server.leases.stats().ended.drop).toBe(0);
    expect((await client.request({ type: 'step', data: { code: 'echo hi' } })).type).toBe('observation');
    client.ws.close();
  });

  it('takes over no session by a forged or a live id (/ws?session_id=): 4004, and the session named goes on', async () => {
    const { server } = await start({ sessions: 2 });
    const victim = new TestClient(server.url);
    await victim.opened;
    await victim.request({ type: 'reset', data: {} });
    const liveId = [...(server.leases as unknown as { leases: Map<string, unknown> }).leases.keys()][0]!;
    for (const id of [liveId, '00000000-0000-4000-8000-000000000000', 'x'.repeat(10_000), '']) {
      const thief = new TestClient(server.url, {}, new WebSocket(`${server.url.replace(/^http/, 'ws')}/ws?session_id=${encodeURIComponent(id)}`));
      expect((await thief.closed).code, `session_id of ${id.length} chars`).toBe(4004);
    }
    expect(server.leases.active).toBe(1);
    expect((await victim.request({ type: 'step', data: { code: 'echo mine' } })).type).toBe('observation');
    victim.ws.close();
  });

  it('drains on close: open sessions end with 1001 and new connections are refused', async () => {
    const { server } = await start();
    const client = new TestClient(server.url);
    await client.opened;
    await client.request({ type: 'reset', data: {} });
    await server.close();
    expect((await client.closed).code).toBe(1001);
    expect(server.leases.stats().ended.shutdown).toBe(1);
    await expect(fetch(`${server.url}/health`)).rejects.toThrow();
  });
});

describe('MCP endpoint, bad requests', () => {
  const initialize = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 't', version: '0' } } });
  const mcpHeaders = { accept: 'application/json, text/event-stream' };

  it('answers each with its status and frees every slot it took', async () => {
    const { server } = await start({ sessions: 1 });
    expect((await post(`${server.url}/mcp`, '{"jsonrpc": ', mcpHeaders)).status).toBe(400);
    expect((await post(`${server.url}/mcp`, 'x'.repeat(5000), mcpHeaders)).status).toBe(413);
    expect((await post(`${server.url}/mcp`, initialize, { ...mcpHeaders, 'mcp-session-id': 'no-such-session' })).status).toBe(404);
    // Not an initialize and in no session: OpenEnv's JSON-RPC dialect answers (HTTP 200, as its server does).
    const listed = await post(`${server.url}/mcp`, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), mcpHeaders);
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { result: { tools: unknown[] } }).result.tools).toHaveLength(3);
    expect(await (await post(`${server.url}/mcp`, '{}')).json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
    expect((await fetch(`${server.url}/mcp`)).status).toBe(400);
    // An initialize the SDK refuses (no Accept header it serves) holds no slot afterwards.
    expect((await post(`${server.url}/mcp`, initialize)).status).toBeGreaterThanOrEqual(400);
    expect(server.leases.active).toBe(0);
    // The one slot is free: a proper initialize gets a session; the next finds no room (503).
    const made = await post(`${server.url}/mcp`, initialize, mcpHeaders);
    expect(made.status).toBe(200);
    expect(made.headers.get('mcp-session-id')).toBeTruthy();
    // At capacity the refusal answers the initialize as a JSON-RPC error (HTTP 200: the MCP SDKs read no error body).
    const refused = await post(`${server.url}/mcp`, initialize, mcpHeaders);
    expect(refused.status).toBe(200);
    expect(refused.headers.get('mcp-session-id')).toBeNull();
    expect(await refused.json()).toMatchObject({ id: 1, error: { code: -32000, message: 'all 1 sessions are in use (CAPACITY_REACHED)', data: { code: 'CAPACITY_REACHED', max_sessions: 1 } } });
    expect(server.leases.stats()).toMatchObject({ active: 1, max: 1, opened: 2, refused: 1, ended: { close: 1 } });
  });
});

describe('without a token, only this machine', () => {
  it('refuses a page of another site (Origin) and a rebound name (Host) on HTTP and WebSocket; loopback clients pass', async () => {
    const { server } = await start();
    expect((await fetch(`${server.url}/schema`)).status).toBe(200);
    expect((await fetch(`${server.url}/schema`, { headers: { origin: 'http://localhost:3000' } })).status).toBe(200);
    expect((await fetch(`${server.url}/schema`, { headers: { origin: 'https://evil.example' } })).status).toBe(403);
    expect((await post(`${server.url}/reset`, '{}', { origin: 'https://evil.example' })).status).toBe(403);
    expect((await post(`${server.url}/mcp`, '{}', { origin: 'null' })).status).toBe(403);
    // A DNS-rebinding page reaches 127.0.0.1 under its own name: the Host header says so.
    const rebound = await new Promise<string>((resolve, reject) => {
      const socket = connect(server.port, '127.0.0.1');
      let answer = '';
      socket.on('data', (chunk) => (answer += chunk.toString()));
      socket.on('close', () => resolve(answer));
      socket.on('error', reject);
      socket.write('GET /schema HTTP/1.1\r\nHost: evil.example:8000\r\nConnection: close\r\n\r\n');
    });
    expect(rebound).toMatch(/^HTTP\/1\.1 403 /);
    await expect(new TestClient(server.url, { origin: 'https://evil.example' }).opened).rejects.toThrow(/HTTP 403/);
    const local = new TestClient(server.url);
    await local.opened;
    expect((await local.request({ type: 'reset', data: {} })).type).toBe('observation');
    local.ws.close();
  });
});

describe('loopback by any of its names', () => {
  /** The status line of a raw GET with this Host (and Origin) header: fetch sets Host itself. */
  const rawGet = (port: number, address: string, path: string, headers: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect(port, address);
      let answer = '';
      socket.on('data', (chunk) => (answer += chunk.toString()));
      socket.on('close', () => resolve(answer.split('\r\n')[0]!));
      socket.on('error', reject);
      socket.write(`GET ${path} HTTP/1.1\r\n${headers}Connection: close\r\n\r\n`);
    });

  it('Host and Origin of localhost, 127.0.0.1 and [::1], with or without a port, pass on HTTP and WebSocket', async () => {
    const { server } = await start();
    const port = server.port;
    for (const host of ['localhost', `localhost:${port}`, '127.0.0.1', `127.0.0.1:${port}`, '[::1]', `[::1]:${port}`, `LOCALHOST:${port}`]) {
      expect(await rawGet(port, '127.0.0.1', '/health', `Host: ${host}\r\n`), host).toBe('HTTP/1.1 200 OK');
      expect(await rawGet(port, '127.0.0.1', '/schema', `Host: ${host}\r\n`), host).toBe('HTTP/1.1 200 OK');
    }
    for (const origin of ['http://localhost:3000', 'http://localhost', 'http://[::1]:8000', 'http://127.0.0.1:5173']) {
      expect(await rawGet(port, '127.0.0.1', '/schema', `Host: localhost:${port}\r\nOrigin: ${origin}\r\n`), origin).toBe('HTTP/1.1 200 OK');
    }
    // What is not loopback stays refused: a name that only starts like it, a scheme-like Host, no Host.
    for (const headers of ['Host: localhost.evil.example\r\n', 'Host: evil.example:8000\r\n', `Host: localhost:${port}\r\nOrigin: http://localhost.evil.example\r\n`]) {
      expect(await rawGet(port, '127.0.0.1', '/schema', headers), headers).toBe('HTTP/1.1 403 Forbidden');
    }
    // A WebSocket client that names the server localhost (as OpenEnv's tutorials do).
    const named = new TestClient(`http://localhost:${port}`);
    await named.opened;
    expect((await named.request({ type: 'reset', data: {} })).type).toBe('observation');
    named.ws.close();
  });

  it('a server on [::1] serves clients that call it [::1] or localhost', async () => {
    const { server } = await start({ host: '::1' });
    expect(server.url).toBe(`http://[::1]:${server.port}`);
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    expect(await rawGet(server.port, '::1', '/schema', `Host: localhost:${server.port}\r\n`)).toBe('HTTP/1.1 200 OK');
    const client = new TestClient(server.url, { origin: `http://[::1]:${server.port}` });
    await client.opened;
    expect((await client.request({ type: 'reset', data: {} })).type).toBe('observation');
    client.ws.close();
  });
});

describe('bearer token', () => {
  it('is required on HTTP, WebSocket and MCP, except /health', async () => {
    const { server } = await start({ token: TOKEN });
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    expect((await fetch(`${server.url}/schema`)).status).toBe(401);
    expect((await fetch(`${server.url}/schema`, { headers: { authorization: 'Bearer wrong-token-xx' } })).status).toBe(401);
    expect((await fetch(`${server.url}/schema`, { headers: { authorization: `Bearer ${TOKEN}x` } })).status).toBe(401);
    expect((await fetch(`${server.url}/schema`, { headers: { authorization: TOKEN } })).status).toBe(401);
    expect((await fetch(`${server.url}/schema`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
    expect((await post(`${server.url}/mcp`, '{}')).status).toBe(401);
    await expect(new TestClient(server.url).opened).rejects.toThrow(/HTTP 401/);
    await expect(new TestClient(server.url, { authorization: 'Bearer nope-nope-nope' }).opened).rejects.toThrow(/HTTP 401/);
    const client = new TestClient(server.url, { authorization: `Bearer ${TOKEN}` });
    await client.opened;
    expect((await client.request({ type: 'reset', data: {} })).type).toBe('observation');
    client.ws.close();
    expect(server.leases.stats().opened).toBe(1);
  });
});
