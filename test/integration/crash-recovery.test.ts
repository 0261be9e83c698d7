/**
 * Shutdown and recovery with real processes: a run holding 16 live sandboxes is SIGKILLed
 * and the next start's reaper leaves none (while a live run's sandbox is kept); a run with
 * the shutdown handlers removes its own sandboxes on SIGTERM, and on a double Ctrl-C exits
 * at once, its leftovers reaped as a crash's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type Docker from 'dockerode';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBaseImage, BASE_IMAGE } from '../../src/images/image-builder.js';
import { DockerRuntime } from '../../src/sandbox/docker/docker-runtime.js';
import { channelOwner, channelRoot } from '../../src/sandbox/docker/fifo-channel.js';
import { RUN_LABEL, runLabelValue } from '../../src/sandbox/docker/labels.js';
import { reapCrashedRuns } from '../../src/sandbox/lifecycle/reaper.js';
import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS } from '../../src/sandbox/types.js';
import { dockerTestFile, requireEngine, skipWithoutEngine, testContainers } from '../setup/docker.js';

const { testRun, engine } = await dockerTestFile();
const CHILD = fileURLToPath(new URL('./crash-recovery.child.ts', import.meta.url));

interface HoldingRun {
  child: ChildProcess;
  ids: string[];
  stderr: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts a child run holding `count` live sandboxes and waits for its `ready` line. */
async function startHoldingRun(count: number, mode: 'plain' | 'handlers'): Promise<HoldingRun> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, String(count), BASE_IMAGE, mode], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const ids = await new Promise<string[]>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const line = /^ready (.*)\n/m.exec(stdout);
      if (line) resolve(line[1]!.split(','));
    });
    void exit.then(({ code, signal }) => reject(new Error(`child exited (${code ?? signal}) before ready: ${stderr}`)));
  });
  return { child, ids, stderr: () => stderr, exit };
}

describe.skipIf(skipWithoutEngine(engine, 'crash recovery tests'))('shutdown and crash recovery', () => {
  let docker: Docker;
  const ofRun = async (pid: number) => (await testContainers(docker, testRun)).filter((c) => c.Labels[RUN_LABEL] === runLabelValue(pid));

  beforeAll(async () => {
    docker = requireEngine(engine);
    await ensureBaseImage(docker, (line) => console.log(`[image] ${line}`));
  }, 600_000);

  it('reaps the 16 live sandboxes of a SIGKILLed run on the next start, and keeps a live run\'s', async () => {
    const mine = await new DockerRuntime(docker).create({ image: BASE_IMAGE, hostname: 'intercode', limits: DEFAULT_LIMITS, capabilities: DEFAULT_CAPABILITIES });
    const run = await startHoldingRun(16, 'plain');
    expect(run.ids).toHaveLength(16);
    const pid = run.child.pid!;
    expect((await ofRun(pid)).map((c) => c.State)).toEqual(Array(16).fill('running'));

    run.child.kill('SIGKILL');
    expect(await run.exit).toEqual({ code: null, signal: 'SIGKILL' });
    expect(await ofRun(pid)).toHaveLength(16);

    // One container removed behind the run's back leaves its channel directory without a container.
    const channels = () => readdirSync(channelRoot()).filter((name) => channelOwner(name) === pid);
    expect(channels()).toHaveLength(16);
    await docker.getContainer(run.ids[0]!).remove({ force: true });
    expect(await reapCrashedRuns(docker, { testRun })).toBe(15);
    expect(await ofRun(pid)).toEqual([]);
    expect(channels()).toEqual([]);
    expect((await testContainers(docker, testRun)).map((c) => c.Id)).toEqual([mine.id]);
    expect(await reapCrashedRuns(docker, { testRun })).toBe(0);
    await mine.destroy();
  }, 300_000);

  it('removes its own sandboxes on SIGTERM and exits with 143', async () => {
    const run = await startHoldingRun(8, 'handlers');
    const pid = run.child.pid!;
    expect(await ofRun(pid)).toHaveLength(8);
    run.child.kill('SIGTERM');
    expect(await run.exit).toEqual({ code: 143, signal: null });
    expect(run.stderr()).toMatch(/SIGTERM; removing 8 sandbox\(es\)/);
    expect(run.stderr()).toMatch(/removed 8 sandbox\(es\)\n/);
    expect(await ofRun(pid)).toEqual([]);
  }, 300_000);

  it('exits at once on a second Ctrl-C with 130, leaving what it had not removed to the reaper', async () => {
    const run = await startHoldingRun(16, 'handlers');
    const pid = run.child.pid!;
    run.child.kill('SIGINT');
    // Signals sent back to back merge into one: the second goes once the drain has begun.
    while (!/removing 16 sandbox/.test(run.stderr())) await new Promise((r) => setTimeout(r, 5));
    run.child.kill('SIGINT');
    expect(await run.exit).toEqual({ code: 130, signal: null });
    expect(run.stderr()).toMatch(/SIGINT again; exiting now with (no sandbox|\d+ sandbox\(es\)) left/);
    await reapCrashedRuns(docker, { testRun });
    expect(await ofRun(pid)).toEqual([]);
  }, 300_000);

  // Containers: on episode roots (the default here) the roots go with their pool's helper when the process dies (serve-crash.test.ts).
  it('`run bash` stopped by a double Ctrl-C while its pool fills: the line counts the sandboxes it leaves (those being created as at most)', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url)), 'run', 'bash', '--keep-warm', '0', '--sandbox-kind', 'containers'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    // Episodes running, the pool still making sandboxes (each used one is replaced or restored).
    while (!/^tasks: /m.test(stderr)) await new Promise((r) => setTimeout(r, 20));
    child.kill('SIGINT');
    while (!/SIGINT; removing/.test(stderr)) await new Promise((r) => setTimeout(r, 5));
    child.kill('SIGINT');
    expect(await exit).toBe(130);
    const said = /SIGINT again; exiting now with (?:no sandbox|(\d+) sandbox\(es\)) left(?: and up to (\d+) more whose creation was under way)?/.exec(stderr);
    expect(said, stderr).not.toBeNull();
    const left = Number(said![1] ?? 0);
    const creating = Number(said![2] ?? 0);
    // What the engine finishes (removals and creations already sent) settles within seconds.
    let counts: number[] = [];
    for (let i = 0; i < 30 && !(counts.length >= 3 && counts.slice(-3).every((c) => c === counts.at(-1))); i++) {
      await new Promise((r) => setTimeout(r, 500));
      const containers = await ofRun(child.pid!);
      counts = containers.some((c) => c.State === 'removing') ? [] : [...counts, containers.length];
    }
    const found = counts.at(-1)!;
    expect(found, `counts ${counts.join(',')}; ${stderr}`).toBeGreaterThanOrEqual(left);
    expect(found, `counts ${counts.join(',')}; ${stderr}`).toBeLessThanOrEqual(left + creating);
    await reapCrashedRuns(docker, { testRun });
  }, 300_000);
});
