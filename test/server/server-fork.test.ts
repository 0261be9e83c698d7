/**
 * The server's checkpoint extension over real bash sandboxes (docs/server.md#checkpoint-and-fork-an-extension):
 * - over /ws, an episode checkpointed at step 2 and forked into 2 sessions goes on in each
 *   child and in the parent independently (a write in one is seen in no other), and the parent
 *   restores its checkpoint;
 * - a session's checkpoints die with it (their files are removed; no other session can name them);
 * - a fork past the server's capacity is refused at once (CAPACITY_REACHED), nothing queued or kept;
 * - over MCP (the official TypeScript client, `checkpointTools`), the same tools fork an episode
 *   whose child is reached through OpenEnv's `session_id`;
 * - a forked session nobody takes ends at the idle timeout, its slot given back;
 * - the python env checkpoints and forks by replay: a forked session has the parent's globals,
 *   and an episode that read the clock is refused (CHECKPOINT_REFUSED) while its session goes on.
 */
import { existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type Docker from 'dockerode';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBashEnvs } from '../../envs/bash/index.js';
import { ENV_PLUGINS } from '../../envs/index.js';
import { commandEngines, releaseEngines } from '../../src/cli/engine-flag.js';
import { EnvServer, pooledEnvSlots, type EnvSlots } from '../../src/server/index.js';
import { dockerTestFile, requireEngine, skipWithoutEngine, testContainers } from '../setup/docker.js';
import { TestClient, until, startLoopbackServer, type Message } from './helpers.js';

const { testRun, engine } = await dockerTestFile();
const CAPACITY = 4;

/** A client on the fork's session `id`. */
function attach(server: EnvServer, id: string): TestClient {
  return new TestClient(server.url, {}, new WebSocket(`${server.url.replace(/^http/, 'ws')}/ws?session_id=${encodeURIComponent(id)}`));
}

const output = (message: Message): string => String(message.data.observation?.output ?? JSON.stringify(message.data));

/** Where a checkpoint's files are while it lives (src/env/checkpoint.ts: one folder per handle in a store's folder). */
function checkpointFolders(id: string): string[] {
  return readdirSync(tmpdir())
    .filter((name) => name.startsWith('intercode-checkpoints-'))
    .map((name) => join(tmpdir(), name, id))
    .filter((path) => existsSync(path));
}

describe.skipIf(skipWithoutEngine(engine, 'server checkpoint and fork over bash sandboxes'))('server: checkpoint, restore and fork over bash sandboxes', () => {
  let docker: Docker;
  let server: EnvServer;
  let slots: EnvSlots;

  beforeAll(async () => {
    docker = requireEngine(engine);
    const envs = await createBashEnvs({}, CAPACITY);
    slots = pooledEnvSlots('bash', envs, { spares: 1 });
    await slots.ready();
    server = await startLoopbackServer(slots, 'intercode-bash', { checkpointTools: true });
  }, 300_000);

  afterAll(async () => {
    await server?.close();
    if (docker) expect(await testContainers(docker, testRun, true)).toHaveLength(0);
  });

  const idle = () => until(() => server.leases.active === 0 && slots.inUse === 0, 60_000);

  it('checkpoint at step 2, fork into 2 sessions: each child and the parent go on independently; the parent restores', async () => {
    const parent = new TestClient(server.url);
    await parent.opened;
    expect((await parent.request({ type: 'reset', data: { task_id: 0 } })).type).toBe('observation');
    await parent.request({ type: 'step', data: { code: 'echo base > /tmp/base.txt; export FORKED=yes' } });
    await parent.request({ type: 'step', data: { code: 'cd /tmp' } });

    const saved = await parent.request({ type: 'checkpoint' });
    expect(saved.type, JSON.stringify(saved.data)).toBe('checkpoint');
    expect(saved.data).toMatchObject({ step_count: 2, info: { dropped: { processes: [] } } });
    const checkpointId = saved.data.checkpoint_id as string;
    expect(checkpointFolders(checkpointId)).toHaveLength(1);

    const forked = await parent.request({ type: 'fork', data: { n: 2 } });
    expect(forked.type, JSON.stringify(forked.data)).toBe('fork');
    const sessions = forked.data.sessions as { session_id: string; episode_id: string }[];
    expect(sessions).toHaveLength(2);
    expect(forked.data.step_count).toBe(2);
    expect(server.leases.active).toBe(3);

    const [a, b] = sessions.map((s) => attach(server, s.session_id));
    await Promise.all([a!.opened, b!.opened]);
    for (const [child, session] of [[a!, sessions[0]!], [b!, sessions[1]!]] as const) {
      const state = await child.request({ type: 'state' });
      expect(state.data).toMatchObject({ episode_id: session.episode_id, step_count: 2, task_id: 0, env: 'bash' });
    }
    // Each child has the parent's files, cwd and variables at step 2.
    const seenByA = await a!.request({ type: 'step', data: { code: 'pwd; cat base.txt; echo $FORKED; echo from-a > /tmp/mine.txt' } });
    expect(output(seenByA)).toBe('/tmp\nbase\nyes\n');
    const seenByB = await b!.request({ type: 'step', data: { code: 'pwd; echo $FORKED; cat /tmp/mine.txt 2>&1; echo from-b > /tmp/mine.txt; cat /tmp/mine.txt' } });
    expect(output(seenByB)).toMatch(/^\/tmp\nyes\ncat: \/tmp\/mine.txt: No such file or directory\nfrom-b\n$/);
    expect(output(await a!.request({ type: 'step', data: { code: 'cat /tmp/mine.txt' } }))).toBe('from-a\n');
    // The parent goes on: none of the children's writes.
    expect(output(await parent.request({ type: 'step', data: { code: 'cat /tmp/mine.txt 2>&1; echo parent > /tmp/parent.txt' } }))).toMatch(/No such file or directory/);
    expect((await parent.request({ type: 'state' })).data).toMatchObject({ step_count: 3 });
    expect(output(await a!.request({ type: 'step', data: { code: 'ls /tmp/parent.txt 2>&1' } }))).toMatch(/No such file or directory/);
    // A child's session ends on its own; the episode it continued can end scored.
    const submitted = await b!.request({ type: 'step', data: { code: 'submit' } });
    expect(submitted.data).toMatchObject({ done: true });
    expect(typeof submitted.data.reward).toBe('number');

    // The parent goes back to its checkpoint: step 2, without its later write.
    const restored = await parent.request({ type: 'restore', data: { checkpoint_id: checkpointId } });
    expect(restored.type, JSON.stringify(restored.data)).toBe('state');
    expect(restored.data).toMatchObject({ step_count: 2, task_id: 0 });
    expect(output(await parent.request({ type: 'step', data: { code: 'pwd; echo $FORKED; ls /tmp/parent.txt 2>&1' } }))).toMatch(/^\/tmp\nyes\nls: cannot access '\/tmp\/parent.txt': No such file or directory\n$/);

    // A forked session is taken once.
    const again = attach(server, sessions[0]!.session_id);
    expect((await again.next()).data).toMatchObject({ code: 'SESSION_ERROR' });
    expect((await again.closed).code).toBe(4004);

    for (const client of [a!, b!, parent]) client.send({ type: 'close' });
    await idle();
    expect(checkpointFolders(checkpointId)).toHaveLength(0);
  }, 300_000);

  it("a session's checkpoints die with it: their files are removed and no other session can name them", async () => {
    const owner = new TestClient(server.url);
    const other = new TestClient(server.url);
    await Promise.all([owner.opened, other.opened]);
    await owner.request({ type: 'reset', data: { task_id: 1 } });
    await owner.request({ type: 'step', data: { code: 'echo x > /tmp/x' } });
    const first = await owner.request({ type: 'checkpoint' });
    const second = await owner.request({ type: 'checkpoint' });
    const ids = [first.data.checkpoint_id as string, second.data.checkpoint_id as string];
    for (const id of ids) expect(checkpointFolders(id)).toHaveLength(1);
    // Released by hand: gone at once, and no longer restorable.
    expect((await owner.request({ type: 'release', data: { checkpoint_id: ids[0] } })).type).toBe('released');
    expect(checkpointFolders(ids[0]!)).toHaveLength(0);
    expect((await owner.request({ type: 'restore', data: { checkpoint_id: ids[0] } })).data).toMatchObject({ code: 'VALIDATION_ERROR' });
    // Another session cannot restore this session's checkpoint.
    await other.request({ type: 'reset', data: { task_id: 1 } });
    expect((await other.request({ type: 'restore', data: { checkpoint_id: ids[1] } })).data).toMatchObject({ code: 'VALIDATION_ERROR' });
    // The owner's connection goes away (no close message): the handle's files go with the session.
    owner.ws.terminate();
    await until(() => checkpointFolders(ids[1]!).length === 0, 60_000);
    other.send({ type: 'close' });
    await idle();
  }, 300_000);

  it('a fork past capacity is refused at once with CAPACITY_REACHED; nothing is queued or kept, the session goes on', async () => {
    const parent = new TestClient(server.url);
    await parent.opened;
    await parent.request({ type: 'reset', data: { task_id: 0 } });
    await parent.request({ type: 'step', data: { code: 'echo kept > /tmp/kept' } });
    const refused = await parent.request({ type: 'fork', data: { n: CAPACITY } });
    expect(refused.type).toBe('error');
    expect(refused.data).toMatchObject({ code: 'CAPACITY_REACHED', retryable: true, requested: CAPACITY, free: CAPACITY - 1, max_sessions: CAPACITY });
    expect(server.leases.active).toBe(1);
    expect(slots.inUse).toBe(1);
    expect((await parent.request({ type: 'fork', data: { n: 0 } })).data).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect(output(await parent.request({ type: 'step', data: { code: 'cat /tmp/kept' } }))).toBe('kept\n');
    // Exactly the free slots: accepted; one more session is then refused.
    const full = await parent.request({ type: 'fork', data: { n: CAPACITY - 1 } });
    expect(full.type, JSON.stringify(full.data)).toBe('fork');
    expect(server.leases.active).toBe(CAPACITY);
    const late = new TestClient(server.url);
    expect((await late.next()).data).toMatchObject({ code: 'CAPACITY_REACHED' });
    // Forks nobody takes are sessions like any other: ended (here by the parent's close and
    // their own idle timeout would do it too; closing the server ends them all).
    const children = (full.data.sessions as { session_id: string }[]).map((s) => attach(server, s.session_id));
    await Promise.all(children.map((child) => child.opened));
    for (const client of [...children, parent]) client.send({ type: 'close' });
    await idle();
  }, 300_000);

  it('a session dropped while it forks takes its forks with it (nobody could reach them)', async () => {
    const parent = new TestClient(server.url);
    await parent.opened;
    await parent.request({ type: 'reset', data: { task_id: 0 } });
    parent.send({ type: 'fork', data: { n: 2 } });
    // The forks' sessions exist once their envs are taken, before the restores finish.
    await until(() => server.leases.active === 3, 30_000);
    parent.ws.terminate();
    // Well before the idle timeout (60 s here).
    await until(() => server.leases.active === 0 && slots.inUse === 0, 30_000);
  }, 120_000);

  it('MCP tools checkpoint, restore and fork; the forked child is reached by its session_id', async () => {
    const client = new Client({ name: 'intercode-test', version: '0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`));
    await client.connect(transport);
    const texts = (result: Awaited<ReturnType<Client['callTool']>>) => (result.content as { type: string; text: string }[]).map((c) => c.text);
    try {
      const tools = (await client.listTools()).tools.map((tool) => tool.name);
      expect(tools).toEqual(['reset', 'execute', 'submit', 'checkpoint', 'restore', 'release', 'fork']);
      const early = await client.callTool({ name: 'checkpoint', arguments: {} });
      expect(early.isError).toBe(true);
      expect(texts(early)[0]).toMatch(/^SESSION_ERROR: /);
      await client.callTool({ name: 'reset', arguments: { task_id: 0 } });
      await client.callTool({ name: 'execute', arguments: { code: 'echo one > /tmp/one' } });
      await client.callTool({ name: 'execute', arguments: { code: 'echo two > /tmp/two' } });
      const saved = JSON.parse(texts(await client.callTool({ name: 'checkpoint', arguments: {} }))[0]!) as { checkpoint_id: string; step_count: number };
      expect(saved.step_count).toBe(2);
      const forked = await client.callTool({ name: 'fork', arguments: { n: 1 } });
      expect(forked.isError, texts(forked).join('\n')).toBeFalsy();
      const { sessions } = JSON.parse(texts(forked)[0]!) as { sessions: { session_id: string }[] };
      const rpc = async (method: string, params: Record<string, unknown>) => {
        const response = await fetch(`${server.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
        return (await response.json()) as { result?: { data: { output: string } }; error?: unknown };
      };
      const inChild = await rpc('tools/call', { name: 'execute', arguments: { code: 'cat /tmp/one /tmp/two; echo child > /tmp/child' }, session_id: sessions[0]!.session_id });
      expect(inChild.result?.data.output, JSON.stringify(inChild)).toBe('one\ntwo\n');
      expect(texts(await client.callTool({ name: 'execute', arguments: { code: 'ls /tmp/child 2>&1; echo three > /tmp/three' } }))[0]).toMatch(/No such file or directory/);
      expect((await rpc('tools/call', { name: 'execute', arguments: { code: 'ls /tmp/three 2>&1' }, session_id: sessions[0]!.session_id })).result?.data.output).toMatch(/No such file or directory/);
      const restored = await client.callTool({ name: 'restore', arguments: { checkpoint_id: saved.checkpoint_id } });
      expect(JSON.parse(texts(restored)[0]!)).toMatchObject({ step_count: 2 });
      expect(texts(await client.callTool({ name: 'execute', arguments: { code: 'ls /tmp/three 2>&1' } }))[0]).toMatch(/No such file or directory/);
      const released = await client.callTool({ name: 'release', arguments: { checkpoint_id: saved.checkpoint_id } });
      expect(released.isError).toBeFalsy();
      expect(checkpointFolders(saved.checkpoint_id)).toHaveLength(0);
      expect((await rpc('openenv/session/close', { session_id: sessions[0]!.session_id })).result).toMatchObject({ closed: true });
    } finally {
      await transport.terminateSession();
      await client.close();
    }
    await idle();
  }, 300_000);

  it("OpenEnv's dialects list and call the same checkpoint tools: JSON-RPC on /mcp with a session, and tool-calling step actions over /ws", async () => {
    const rpc = async (method: string, params: Record<string, unknown> = {}) => {
      const response = await fetch(`${server.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
      return (await response.json()) as { result?: { tools?: { name: string }[]; data?: Record<string, unknown> & { output?: string } }; error?: { code: number; message: string } };
    };
    const names = ['reset', 'execute', 'submit', 'checkpoint', 'restore', 'release', 'fork'];
    expect((await rpc('tools/list')).result?.tools?.map((tool) => tool.name)).toEqual(names);
    // A checkpoint lives in its session: a call without one is refused, nothing runs.
    expect((await rpc('tools/call', { name: 'checkpoint', arguments: {} })).error).toMatchObject({ code: -32602, message: expect.stringMatching(/checkpoint needs a session/) });
    const sessionId = ((await rpc('openenv/session/create')).result as unknown as { session_id: string }).session_id;
    const call = (name: string, args: Record<string, unknown>, session = sessionId) => rpc('tools/call', { name, arguments: args, session_id: session });
    await call('reset', { task_id: 0 });
    await call('execute', { code: 'echo rpc > /tmp/rpc && export V=7' });
    const saved = (await call('checkpoint', {})).result?.data as { checkpoint_id: string; step_count: number };
    expect(saved.step_count).toBe(1);
    expect((await call('restore', { checkpoint_id: 'ckpt-nope' })).error?.message).toMatch(/\(SESSION_ERROR\)$|\(VALIDATION_ERROR\)$/);
    expect((await call('fork', { n: 0 })).error?.message).toMatch(/n must be an integer/);
    // Hostile arguments: refused before anything runs, never a sandbox per asked child.
    for (const n of [65, 1e9, 1.5, '2', null, -1]) expect((await call('fork', { n })).error?.message, String(n)).toMatch(/n must be an integer 1–64/);
    for (const checkpoint_id of [7, null, ['ckpt-1'], { id: 'ckpt-1' }, '']) {
      expect((await call('restore', { checkpoint_id })).error?.message, JSON.stringify(checkpoint_id)).toMatch(/checkpoint_id must be a non-empty string/);
      expect((await call('release', { checkpoint_id })).error?.message, JSON.stringify(checkpoint_id)).toMatch(/checkpoint_id must be a non-empty string/);
    }
    const forked = (await call('fork', { n: 1 })).result?.data as { sessions: { session_id: string }[] };
    const child = forked.sessions[0]!.session_id;
    expect((await call('execute', { code: 'cat /tmp/rpc; echo "$V"; echo c > /tmp/c' }, child)).result?.data?.output).toBe('rpc\n7\n');
    expect((await call('execute', { code: 'ls /tmp/c 2>&1' })).result?.data?.output).toMatch(/No such file/);
    expect((await call('release', { checkpoint_id: saved.checkpoint_id })).error).toBeUndefined();
    expect(checkpointFolders(saved.checkpoint_id)).toHaveLength(0);
    for (const id of [child, sessionId]) expect((await rpc('openenv/session/close', { session_id: id })).result).toMatchObject({ closed: true });

    // OpenEnv's MCPToolClient default mode: tools as step actions over /ws.
    const ws = new TestClient(server.url);
    await ws.opened;
    try {
      const listed = await ws.request({ type: 'step', data: { type: 'list_tools' } });
      expect((listed.data.observation as { tools: { name: string }[] }).tools.map((tool) => tool.name)).toEqual(names);
      await ws.request({ type: 'reset', data: { task_id: 0 } });
      await ws.request({ type: 'step', data: { code: 'echo ws > /tmp/ws' } });
      const checkpoint = await ws.request({ type: 'step', data: { type: 'call_tool', tool_name: 'checkpoint', arguments: {} } });
      const result = (checkpoint.data.observation as { result: { data: { checkpoint_id: string; step_count: number } }; error: unknown });
      expect(result.error).toBeNull();
      expect(result.result.data.step_count).toBe(1);
      const bad = await ws.request({ type: 'step', data: { type: 'call_tool', tool_name: 'restore', arguments: { checkpoint_id: 'x', extra: 1 } } });
      expect(bad.data.observation).toMatchObject({ result: null, error: { error_type: 'invalid_args' } });
      await ws.request({ type: 'step', data: { code: 'rm /tmp/ws' } });
      const restored = await ws.request({ type: 'step', data: { type: 'call_tool', tool_name: 'restore', arguments: { checkpoint_id: result.result.data.checkpoint_id } } });
      expect(restored.data.observation).toMatchObject({ error: null, result: { data: { step_count: 1 } } });
      expect(output(await ws.request({ type: 'step', data: { code: 'cat /tmp/ws' } }))).toBe('ws\n');
    } finally {
      ws.ws.close();
      await ws.closed;
    }
    await idle();
  }, 300_000);
});

describe.skipIf(skipWithoutEngine(engine, 'server fork idle timeout'))('server: a forked session nobody takes', () => {
  it('ends at the idle timeout, its slot and sandbox given back, while the parent goes on', async () => {
    const docker = requireEngine(engine);
    const envs = await createBashEnvs({}, 2);
    const slots = pooledEnvSlots('bash', envs, { spares: 0 });
    await slots.ready();
    const server = await startLoopbackServer(slots, 'intercode-bash', { idleTimeoutMs: 1_500 });
    try {
      const parent = new TestClient(server.url);
      await parent.opened;
      await parent.request({ type: 'reset', data: { task_id: 0 } });
      const forked = await parent.request({ type: 'fork', data: { n: 1 } });
      expect(forked.type, JSON.stringify(forked.data)).toBe('fork');
      expect(slots.inUse).toBe(2);
      // The parent keeps asking (its own idle timer moves on); the child, never taken, ends.
      const deadline = Date.now() + 60_000;
      while (server.leases.active > 1 && Date.now() < deadline) {
        expect((await parent.request({ type: 'state' })).type).toBe('state');
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      expect(server.leases.active).toBe(1);
      await until(() => slots.inUse === 1, 30_000);
      expect(server.leases.stats().ended.idle).toBe(1);
      const late = attach(server, (forked.data.sessions as { session_id: string }[])[0]!.session_id);
      expect((await late.next()).data).toMatchObject({ code: 'SESSION_ERROR' });
      expect(output(await parent.request({ type: 'step', data: { code: 'echo still here' } }))).toBe('still here\n');
      parent.send({ type: 'close' });
      await until(() => server.leases.active === 0 && slots.inUse === 0);
    } finally {
      await server.close();
    }
    expect(await testContainers(docker, testRun, true)).toHaveLength(0);
  }, 300_000);
});

describe.skipIf(skipWithoutEngine(engine, 'server checkpoint over a python env'))('server: checkpoint and fork over the python env (by replay)', () => {
  it('python forks by replay: the child session has the parent\'s globals and is independent; an episode that read the clock is CHECKPOINT_REFUSED and its session goes on', async () => {
    requireEngine(engine);
    const log = (line: string) => console.log(line);
    const plugin = ENV_PLUGINS.find((p) => p.name === 'python')!;
    const engines = commandEngines({}, log);
    const envs = await plugin.createEnvs({}, 2, { purpose: 'serve', log, engines });
    const slots = pooledEnvSlots('python', envs);
    await slots.ready();
    const server = await startLoopbackServer(slots, 'python', { log });
    try {
      const client = new TestClient(server.url);
      await client.opened;
      await client.request({ type: 'reset', data: { task_id: 0 } });
      await client.request({ type: 'step', data: { code: 'n = 6 * 7' } });
      const saved = await client.request({ type: 'checkpoint' });
      expect(saved.type).toBe('checkpoint');
      // Carried by replay: the reply says how many actions a restore replays, and copies no layer.
      expect(saved.data.info).toMatchObject({ replay: { actions: 1 }, layer: { paths: 0, bytes: 0 } });
      const forked = await client.request({ type: 'fork', data: { n: 1 } });
      expect(forked.type).toBe('fork');
      const sessions = forked.data.sessions as { session_id: string }[];
      const child = attach(server, sessions[0]!.session_id);
      await child.opened;
      expect(output(await child.request({ type: 'step', data: { code: 'print(n)' } }))).toMatch(/42/);
      await child.request({ type: 'step', data: { code: 'mine = 1' } });
      expect(output(await client.request({ type: 'step', data: { code: "print('mine' in globals())" } }))).toMatch(/False/);
      child.send({ type: 'close' });
      await until(() => server.leases.active === 1);
      await client.request({ type: 'step', data: { code: 'import time; t = time.time()' } });
      const refused = await client.request({ type: 'fork', data: { n: 1 } });
      expect(refused.type).toBe('error');
      expect(refused.data).toMatchObject({ code: 'CHECKPOINT_REFUSED', retryable: false });
      expect(server.leases.active).toBe(1);
      expect((await client.request({ type: 'step', data: { code: 'print(n)' } })).data.observation?.output).toMatch(/42/);
      client.send({ type: 'close' });
      await until(() => server.leases.active === 0 && slots.inUse === 0);
    } finally {
      await server.close();
      releaseEngines(engines, log);
    }
  }, 300_000);
});
