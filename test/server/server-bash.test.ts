/**
 * `intercode serve`'s server over real bash sandboxes on the warm pool:
 * - the Python client (Debian's python3-websockets 10.4) plays every built-in task with its
 *   gold over /ws, 64 sessions open at once, and each scores 1.0;
 * - 1,000 sessions dropped without a close frame (half-open, TCP reset, client SIGKILLed),
 *   30 of them after writing a file into their sandboxes, leave no more sandboxes than the pool's size,
 *   and the server at full capacity, every sandbox it then hands out as clean as the first;
 * - the official MCP TypeScript client lists the tools and solves a task.
 */
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bashPlugin } from '../../envs/bash/plugin.js';
import { createBashEnvs } from '../../envs/bash/index.js';
import type { BashEnv } from '../../envs/bash/bash-env.js';
import { EnvServer, pooledEnvSlots, type EnvSlots } from '../../src/server/index.js';
import { dockerTestFile, IN_CI, requireEngine, skipWithoutEngine, testContainers } from '../setup/docker.js';
import { tempDir } from '../setup/temp-dirs.js';
import { TestClient, until, startLoopbackServer } from './helpers.js';
import { rawSession } from './raw-ws.js';

const { testRun, engine } = await dockerTestFile();
const SESSIONS = 64;
const SPARES = 4;
const PYTHON = '/usr/bin/python3';
const CLIENT_DIR = fileURLToPath(new URL('../../clients/python/', import.meta.url));
const HOLDER = fileURLToPath(new URL('./fixtures/hold-sessions.mjs', import.meta.url));
/** What a dropped session of the last waves does to its sandbox before it is dropped. */
const DIRTY = 'echo left > /tmp/left-by-a-dropped-session';
/** How many sessions of the last wave of each kind run {@link DIRTY}. */
const DIRTIED = 10;
/** What a handed-out sandbox answers: how many entries /tmp has, and the dropped sessions' file if it is there. */
const CLEAN_PROBE = 'echo tmp $(ls -A /tmp | wc -l); cat /tmp/left-by-a-dropped-session 2>/dev/null';

/** Whether Debian's Python with python3-websockets is here (CI installs it; elsewhere the test says why it skips). */
function pythonWebsockets(): string | undefined {
  const probe = spawnSync(PYTHON, ['-c', 'import websockets; print(websockets.__version__)'], { encoding: 'utf8' });
  return probe.status === 0 ? probe.stdout.trim() : undefined;
}
const websocketsVersion = pythonWebsockets();
if (!websocketsVersion && !IN_CI) console.warn(`skipping the Python client test: ${PYTHON} cannot import websockets (apt-get install python3-websockets)`);

describe.skipIf(skipWithoutEngine(engine, 'server over bash sandboxes'))('server over bash sandboxes', () => {
  let docker: Docker;
  let envs: BashEnv[];
  let server: EnvServer;
  let slots: EnvSlots;
  const sandboxes = async () => (await testContainers(docker, testRun, true)).length;

  beforeAll(async () => {
    docker = requireEngine(engine);
    // 64 sandboxes on the CI machine's 2 cores: a gold that walks /testbed with a find per
    // directory (task 28) can pass the default 10-s step limit there and score 0.96. What is
    // tested here is the protocol at 64 sessions, not the step limit (test/integration has those).
    envs = await createBashEnvs({ shell: { timeoutMs: 60_000 } }, SESSIONS);
    slots = pooledEnvSlots('bash', envs, { spares: SPARES });
    expect(slots.sandboxLimit).toBe(SESSIONS + SPARES + 1);
    await slots.ready();
    server = await startLoopbackServer(slots, 'intercode-bash', { idleTimeoutMs: 120_000, heartbeatMs: 1_000 });
  });

  afterAll(async () => {
    await server?.close();
    if (docker) expect(await sandboxes()).toBe(0);
  });

  it.skipIf(!websocketsVersion && !IN_CI)('the Python client plays every built-in task with its gold over /ws, 64 sessions at once, each 1.0', async () => {
    expect(websocketsVersion, `${PYTHON} must import websockets (apt-get install python3-websockets)`).toBeDefined();
    const tasks = envs[0]!.tasks;
    expect(tasks.length).toBeGreaterThan(0);
    // Every task once, then again from the start until 64 sessions are filled.
    const episodes = Array.from({ length: Math.max(SESSIONS, tasks.length) }, (_, i) => ({ task_id: i % tasks.length, actions: bashPlugin.goldActions(tasks[i % tasks.length]!) }));
    const file = join(tempDir('intercode-episodes-'), 'episodes.json');
    writeFileSync(file, JSON.stringify(episodes));
    const child = spawn(PYTHON, [join(CLIENT_DIR, 'play_episodes.py'), '--url', server.url, '--episodes', file, '--together'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise((resolve) => child.once('exit', resolve));
    expect(code, stderr).toBe(0);
    const result = JSON.parse(stdout) as { episodes: { task_id: number; reward: number; done: boolean; steps: number }[]; peak_sessions: number; elapsed_sec: number };
    console.log(`python client: ${result.episodes.length} gold episodes in ${result.elapsed_sec.toFixed(1)} s, peak ${result.peak_sessions} sessions (websockets ${websocketsVersion})`);
    expect(result.peak_sessions).toBe(SESSIONS);
    expect(new Set(result.episodes.map((e) => e.task_id)).size).toBe(tasks.length);
    expect(result.episodes.filter((e) => e.reward !== 1)).toEqual([]);
    expect(result.episodes.every((e) => e.done && e.steps === 2)).toBe(true);
    await until(() => server.leases.active === 0);
  }, 600_000);

  it('1,000 sessions dropped without a close frame leave no sandbox beyond the pool and the server at full capacity, each sandbox then clean', async () => {
    const reset = JSON.stringify({ type: 'reset', data: {} });
    // Dropped sessions of the last waves first leave a file behind: a sandbox handed out later must not show it.
    const dirty = JSON.stringify({ type: 'step', data: { code: `${DIRTY}; echo dirtied` } });
    const dropped = { halfOpen: 0, tcpReset: 0, killed: 0 };
    // The gold runs of the test before are new sandboxes outside the pool, removed in the
    // background after their scoring: on a loaded machine some are still there when this test
    // starts (CI counted 71 against the pool's 69). They are no part of what is measured here.
    const before = await sandboxes();
    for (const deadline = Date.now() + 120_000; (await sandboxes()) > slots.sandboxLimit!; ) {
      if (Date.now() > deadline) throw new Error(`${await sandboxes()} sandboxes 120 s after the test before (${before} at its end), more than the pool's ${slots.sandboxLimit}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    if (before > slots.sandboxLimit!) console.log(`${before} sandboxes when the test began (the test before's gold sandboxes), waited until the pool's ${slots.sandboxLimit}`);
    // What a clean sandbox answers to the probe the 64 sessions run at the end.
    const first = new TestClient(server.url);
    await first.opened;
    expect((await first.request({ type: 'reset', data: { task_id: 0 } })).type).toBe('observation');
    const clean = (await first.request({ type: 'step', data: { code: CLEAN_PROBE } })).data.observation?.output;
    expect(clean).toMatch(/^tmp \d+\n$/);
    first.send({ type: 'close' });
    await until(() => server.leases.active === 0);
    let peak = 0;
    const watch = setInterval(() => void sandboxes().then((n) => (peak = Math.max(peak, n))), 250);
    const WAVE = 50;
    try {
      for (let wave = 0; dropped.halfOpen + dropped.tcpReset + dropped.killed < 1000; wave++) {
        const kind = wave % 3;
        // In the last wave of each kind, DIRTIED sessions leave a file in their sandboxes (30 in
        // all, of the pool's 69; not more: a written sandbox is replaced, which takes time).
        const dirtied = wave >= 1000 / WAVE - 3 ? DIRTIED : 0;
        if (kind === 0) {
          // Half-open: the peer stops reading and answering (gone without a FIN); the heartbeat finds it.
          const sockets = await Promise.all(Array.from({ length: WAVE }, (_, i) => (i < dirtied ? rawSession(server.port, [reset, dirty], 'dirtied') : rawSession(server.port, [reset], '"observation"'))));
          for (const socket of sockets) socket.pause();
          await until(() => server.leases.active === 0, 30_000);
          for (const socket of sockets) socket.destroy();
          dropped.halfOpen += WAVE;
        } else if (kind === 1) {
          // Abrupt TCP reset (RST, no close frame).
          const clients = Array.from({ length: WAVE }, () => new TestClient(server.url));
          await Promise.all(clients.map(async (client, i) => {
            await client.opened;
            expect((await client.request(JSON.parse(reset))).type).toBe('observation');
            if (i < dirtied) expect((await client.request(JSON.parse(dirty))).data.observation?.output).toContain('dirtied');
          }));
          for (const client of clients) (client.ws as unknown as { _socket: { resetAndDestroy(): void } })._socket.resetAndDestroy();
          dropped.tcpReset += WAVE;
        } else {
          // A client process SIGKILLed while holding its sessions.
          const holder = spawn(process.execPath, [HOLDER, server.url, String(WAVE), String(dirtied), DIRTY], { stdio: ['ignore', 'pipe', 'inherit'] });
          await new Promise<void>((resolve, reject) => {
            holder.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve());
            holder.once('exit', (code) => reject(new Error(`holder exited ${code} before ready`)));
          });
          holder.kill('SIGKILL');
          await new Promise((resolve) => holder.once('exit', resolve));
          dropped.killed += WAVE;
        }
        await until(() => server.leases.active === 0, 30_000);
        console.log(`wave ${wave} (${['half-open', 'tcp reset', 'killed'][kind]}${dirtied ? `, ${dirtied} wrote a file` : ''}): ${JSON.stringify(dropped)}, ${await sandboxes()} sandboxes`);
      }
    } finally {
      clearInterval(watch);
    }
    const stats = server.leases.stats();
    console.log(`dropped ${JSON.stringify(dropped)}; ended ${JSON.stringify(stats.ended)}; peak sandboxes ${peak} (pool size ${slots.sandboxLimit})`);
    expect(dropped.halfOpen).toBeGreaterThanOrEqual(300);
    expect(dropped.tcpReset).toBeGreaterThanOrEqual(300);
    expect(dropped.killed).toBeGreaterThanOrEqual(300);
    expect(stats.ended.drop).toBeGreaterThanOrEqual(1000);
    expect(peak).toBeLessThanOrEqual(slots.sandboxLimit!);
    expect(await sandboxes()).toBeLessThanOrEqual(slots.sandboxLimit!);
    expect(slots.inUse).toBe(0);
    // Full capacity afterwards: 64 sessions at once, each gets a clean sandbox (none shows a dropped session's file).
    const clients = Array.from({ length: SESSIONS }, () => new TestClient(server.url));
    const replies = await Promise.all(clients.map(async (client) => {
      await client.opened;
      const first = await client.request({ type: 'reset', data: { task_id: 0 } });
      const step = await client.request({ type: 'step', data: { code: CLEAN_PROBE } });
      return { first: first.type, step: step.data.observation?.output };
    }));
    expect(replies.every((r) => r.first === 'observation')).toBe(true);
    expect(replies.filter((r) => r.step !== clean), `sandboxes that differ from a clean one (${JSON.stringify(clean)})`).toEqual([]);
    const refused = new TestClient(server.url);
    await refused.opened;
    expect((await refused.next()).data).toMatchObject({ code: 'CAPACITY_REACHED', active_sessions: SESSIONS, max_sessions: SESSIONS });
    for (const client of clients) client.send({ type: 'close' });
    await until(() => server.leases.active === 0);
  }, 1_200_000);

  it('the official MCP client lists the tools and solves a built-in task', async () => {
    const task = envs[0]!.tasks[0]!;
    const client = new Client({ name: 'intercode-test', version: '0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`));
    await client.connect(transport);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['execute', 'reset', 'submit']);
    expect(server.leases.active).toBe(1);
    const text = (result: Awaited<ReturnType<Client['callTool']>>) => (result.content as { type: string; text: string }[]).map((c) => c.text);
    const early = await client.callTool({ name: 'execute', arguments: { code: 'ls' } });
    expect(early.isError).toBe(true);
    expect(text(early)[0]).toMatch(/^SESSION_ERROR: step before reset/);
    const reset = await client.callTool({ name: 'reset', arguments: { task_id: 0 } });
    expect(text(reset)[0]).toBe(task.query);
    const [, gold] = [null, bashPlugin.goldActions(task)[0]!];
    const ran = await client.callTool({ name: 'execute', arguments: { code: gold } });
    expect(JSON.parse(text(ran)[1]!)).toMatchObject({ reward: 0, done: false, exit_code: 0, task_id: 0 });
    const submitted = await client.callTool({ name: 'submit', arguments: {} });
    expect(JSON.parse(text(submitted)[1]!)).toMatchObject({ reward: 1, done: true });
    await transport.terminateSession();
    await client.close();
    await until(() => server.leases.active === 0);
  }, 120_000);
});
