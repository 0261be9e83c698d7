/**
 * `GET /metrics` scraped by a real Prometheus (Debian's `prometheus`, started here on
 * 127.0.0.1 with a config this test writes, scraping with the server's bearer token) while
 * real bash sandboxes play episodes: its HTTP API returns the episode counts this test
 * produced, and `promtool check metrics` finds the exposition well-formed.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bashPlugin } from '../../envs/bash/plugin.js';
import type { BashEnv } from '../../envs/bash/bash-env.js';
import { createBashEnvs } from '../../envs/bash/index.js';
import { EnvServer, pooledEnvSlots } from '../../src/server/index.js';
import { dockerTestFile, IN_CI, requireEngine, skipWithoutEngine, testContainers } from '../setup/docker.js';
import { TestClient, startLoopbackServer, until } from './helpers.js';

const { testRun, engine } = await dockerTestFile();
const TOKEN = 'metrics-test-token';
const PROMETHEUS = '/usr/bin/prometheus';
const hasPrometheus = spawnSync(PROMETHEUS, ['--version']).status === 0;
if (!hasPrometheus && IN_CI) throw new Error(`${PROMETHEUS} is missing under CI (intercode setup --with-test-tools installs prometheus)`);
if (!hasPrometheus) console.warn(`skipping the Prometheus test: ${PROMETHEUS} is absent (apt-get install prometheus)`);

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

describe.skipIf(skipWithoutEngine(engine, 'metrics scraped by Prometheus') || !hasPrometheus)('GET /metrics scraped by a real Prometheus', () => {
  let docker: Docker;
  let envs: BashEnv[];
  let server: EnvServer;
  let prometheus: ChildProcess | undefined;
  let dir: string;
  let api: string;

  beforeAll(async () => {
    docker = requireEngine(engine);
    envs = await createBashEnvs({}, 2);
    const slots = pooledEnvSlots('bash', envs, { spares: 1 });
    await slots.ready();
    server = await startLoopbackServer(slots, 'intercode-bash', { token: TOKEN });
    dir = await mkdtemp(join(tmpdir(), 'intercode-prometheus-'));
    const config = [
      'global: { scrape_interval: 1s, evaluation_interval: 1s }',
      'scrape_configs:',
      '  - job_name: intercode',
      '    metrics_path: /metrics',
      `    authorization: { type: Bearer, credentials: ${TOKEN} }`,
      `    static_configs: [{ targets: ['127.0.0.1:${server.port}'] }]`,
      '',
    ].join('\n');
    await writeFile(join(dir, 'prometheus.yml'), config);
    const port = await freePort();
    api = `http://127.0.0.1:${port}/api/v1`;
    prometheus = spawn(PROMETHEUS, [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    prometheus.stderr!.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4000)));
    await until(async () => (await fetch(`${api}/status/buildinfo`).catch(() => undefined))?.ok === true, 60_000).catch(() => {
      throw new Error(`prometheus did not answer: ${log}`);
    });
  }, 600_000);

  afterAll(async () => {
    if (prometheus && prometheus.exitCode === null) {
      prometheus.kill('SIGTERM');
      await new Promise((resolve) => prometheus!.once('exit', resolve));
    }
    if (dir) await rm(dir, { recursive: true, force: true });
    await server?.close();
    if (docker) expect(await testContainers(docker, testRun, true)).toEqual([]);
  });

  const query = async (expr: string): Promise<number | undefined> => {
    const reply = (await (await fetch(`${api}/query?query=${encodeURIComponent(expr)}`)).json()) as { data: { result: { value: [number, string] }[] } };
    const value = reply.data.result[0]?.value[1];
    return value === undefined ? undefined : Number(value);
  };

  it('counts the episodes, sessions and latencies this test produced; Prometheus returns them', async () => {
    const task = envs[0]!.tasks[0]!;
    const [gold] = bashPlugin.goldActions(task);
    const client = new TestClient(server.url, { authorization: `Bearer ${TOKEN}` });
    await client.opened;
    // 3 solved, 1 unsolved (submitted without the gold), 1 abandoned (reset again mid-episode).
    for (const actions of [[gold!, 'submit'], [gold!, 'submit'], ['submit'], [gold!, 'submit'], ['ls']]) {
      expect((await client.request({ type: 'reset', data: { task_id: 0 } })).type).toBe('observation');
      for (const code of actions) expect((await client.request({ type: 'step', data: { code } })).type).toBe('observation');
    }
    expect((await client.request({ type: 'reset', data: { task_id: 0 } })).type).toBe('observation');
    // A second session, then a third refused at capacity (2 envs).
    const second = new TestClient(server.url, { authorization: `Bearer ${TOKEN}` });
    await second.opened;
    const refused = new TestClient(server.url, { authorization: `Bearer ${TOKEN}` });
    await refused.opened;
    expect((await refused.next()).data.code).toBe('CAPACITY_REACHED');
    client.send({ type: 'close' });
    second.send({ type: 'close' });
    await until(() => server.leases.active === 0);

    const text = await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
    expect((await fetch(`${server.url}/metrics`)).status).toBe(401);
    const lint = spawnSync('/usr/bin/promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(lint.status, `${lint.stdout}${lint.stderr}`).toBe(0);

    await until(async () => (await query('intercode_episodes_started_total')) === 6, 30_000);
    expect(await query('intercode_episodes_finished_total{outcome="solved"}')).toBe(3);
    expect(await query('intercode_episodes_finished_total{outcome="unsolved"}')).toBe(1);
    // The `ls` episode (reset again) and the last one (its session closed): abandoned.
    expect(await query('intercode_episodes_finished_total{outcome="abandoned"}')).toBe(2);
    expect(await query('intercode_sessions_refused_total')).toBe(1);
    expect(await query('intercode_sessions_opened_total')).toBe(2);
    expect(await query('intercode_step_seconds_count{result="ok"}')).toBe(8);
    expect(await query('intercode_reset_seconds_count{result="ok"}')).toBe(6);
    expect(await query('intercode_sandboxes_created_total')).toBeGreaterThanOrEqual(3);
    expect(await query('sum(intercode_pool_sandboxes)')).toBeGreaterThanOrEqual(1);
    expect(await query('intercode_rollouts_streamed_total')).toBe(0);
    expect(await query('up{job="intercode"}')).toBe(1);
  }, 300_000);
});
