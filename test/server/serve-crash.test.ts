/**
 * `intercode serve` as a process: a SIGKILLed server's sandboxes (warm spares and those of
 * open sessions) are gone once the next server has started (the crash reaper every
 * env command runs), and SIGTERM drains: sessions end with 1001, every sandbox is removed,
 * the process exits. And the default warm count fits the machine: `--max-sessions 64` makes the
 * spares ahead (4), not a sandbox per possible session; sessions past them get one on demand.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type Docker from 'dockerode';
import { beforeAll, describe, expect, it } from 'vitest';
import { RUN_LABEL, runLabelValue } from '../../src/sandbox/docker/labels.js';
import { POOL_LABEL } from '../../src/sandbox/roots/root-pool.js';
import { dockerTestFile, requireEngine, skipWithoutEngine, testContainers } from '../setup/docker.js';
import { TestClient } from './helpers.js';

const { testRun, engine } = await dockerTestFile();
const MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

interface Serving {
  child: ChildProcess;
  url: string;
  stderr: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

async function serve(flags: string[] = ['--max-sessions', '3', '--spares', '2']): Promise<Serving> {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, 'serve', '--env', 'bash', '--port', '0', ...flags], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const line = stdout.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve((JSON.parse(line) as { url: string }).url);
    });
    void exit.then(({ code, signal }) => reject(new Error(`serve exited (${code ?? signal}) before ready: ${stderr}`)));
  });
  return { child, url, stderr: () => stderr, exit };
}

describe.skipIf(skipWithoutEngine(engine, 'serve process tests'))('intercode serve process', () => {
  let docker: Docker;
  /** Where pools of episode roots keep their folders (beside the engine's data root). */
  let poolsBase: string;
  const ofRun = async (pid: number) => (await testContainers(docker, testRun)).filter((c) => c.Labels[RUN_LABEL] === runLabelValue(pid));
  /**
   * What serve process `pid` holds: its sandboxes (containers, or on episode roots — the
   * default where the engine supports them — the roots in its pool containers' folders), and
   * everything of it there is (its containers, pool containers included, and pool folders).
   */
  const held = async (pid: number) => {
    const containers = await ofRun(pid);
    const pools = containers.filter((c) => c.Labels[POOL_LABEL] !== undefined);
    const roots = pools.flatMap((c) => (existsSync(join(c.Labels[POOL_LABEL]!, 'roots')) ? readdirSync(join(c.Labels[POOL_LABEL]!, 'roots')) : []));
    const poolFolders = existsSync(poolsBase) ? readdirSync(poolsBase).filter((name) => name.startsWith(`${pid}-`)) : [];
    return { sandboxes: containers.length - pools.length + roots.length, onRoots: pools.length > 0, left: [...containers.map((c) => c.Id), ...poolFolders] };
  };

  beforeAll(async () => {
    docker = requireEngine(engine);
    poolsBase = join(dirname(((await docker.info()) as { DockerRootDir?: string }).DockerRootDir ?? '/var/lib/docker'), 'intercode-roots');
  });

  /** Opens `count` sessions, each reset (holding a sandbox). */
  async function hold(url: string, count: number): Promise<TestClient[]> {
    return Promise.all(Array.from({ length: count }, async () => {
      const client = new TestClient(url);
      await client.opened;
      expect((await client.request({ type: 'reset', data: {} })).type).toBe('observation');
      return client;
    }));
  }

  it('leaves nothing of a SIGKILLed server once the next one has started', async () => {
    const first = await serve();
    const clients = await hold(first.url, 2);
    const pid = first.child.pid!;
    const before = await held(pid);
    expect(before.sandboxes).toBeGreaterThanOrEqual(2);
    first.child.kill('SIGKILL');
    expect(await first.exit).toEqual({ code: null, signal: 'SIGKILL' });
    for (const client of clients) await client.closed;
    if (before.onRoots) {
      // The pool's helper kills its roots when the dead server's socket closes, and the engine
      // removes its container; the pool's folders are left for the next start's reaper.
      for (const until = Date.now() + 30_000; Date.now() < until && (await ofRun(pid)).length > 0; ) await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await ofRun(pid)).toEqual([]);
      expect((await held(pid)).left.length).toBeGreaterThan(0);
    } else expect((await ofRun(pid)).length).toBeGreaterThanOrEqual(2);

    const second = await serve();
    expect((await held(pid)).left).toEqual([]);
    if (!before.onRoots) expect(second.stderr()).toMatch(/removed \d+ sandbox\(es\) left by crashed runs/);
    second.child.kill('SIGTERM');
    await second.exit;
  }, 300_000);

  it('drains on SIGTERM: sessions end with 1001, every sandbox is removed, the process exits', async () => {
    const run = await serve();
    const [client] = await hold(run.url, 1);
    const pid = run.child.pid!;
    run.child.kill('SIGTERM');
    expect((await client!.closed).code).toBe(1001);
    expect(await run.exit).toEqual({ code: 0, signal: null });
    expect(run.stderr()).toMatch(/stopped after 1 sessions \(close 0, drop 0, idle 0, shutdown 1\)/);
    expect((await held(pid)).left).toEqual([]);
  }, 300_000);

  it('--max-sessions 64 by default makes 4 sandboxes ahead, not 68; sessions past them get one made when they connect', async () => {
    const run = await serve(['--max-sessions', '64']);
    const pid = run.child.pid!;
    const health = (await (await fetch(`${run.url}/health`)).json()) as { sandboxes: number; max_sessions: number };
    expect(health).toMatchObject({ sandboxes: 4, max_sessions: 64 });
    // The 4 spares, and at most the restorer's pristine template (containers only).
    expect((await held(pid)).sandboxes).toBeGreaterThanOrEqual(4);
    expect((await held(pid)).sandboxes).toBeLessThanOrEqual(5);
    expect(run.stderr()).toContain('4 made ahead; sessions past them get one made when they connect, up to 64');
    const clients = await hold(run.url, 6);
    expect(((await (await fetch(`${run.url}/health`)).json()) as { sandboxes: number }).sandboxes).toBeGreaterThanOrEqual(6);
    for (const client of clients) client.ws.close();
    run.child.kill('SIGTERM');
    expect(await run.exit).toEqual({ code: 0, signal: null });
    expect((await held(pid)).left).toEqual([]);
  }, 300_000);
});
