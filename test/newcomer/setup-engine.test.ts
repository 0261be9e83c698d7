/**
 * `intercode setup` for real: the CLI on this machine's engine (the "engine answers" path,
 * images included), against a DOCKER_HOST that does not answer, as a user who may not use
 * the socket; and the install-and-start steps run on an engine of the test's own (socket,
 * config, data root, exec root, pidfile and log under one temporary folder, removed after).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { SetupError } from '../../src/errors.js';
import { dockerdCommand, missingPackages, pingEngine, planSetup, probeHost, runSetup, startDockerdStep, type DockerdLayout, type SetupResult } from '../../src/setup/index.js';
import { IN_CI, probeEngine } from '../setup/docker.js';
import { mountPointsUnder } from '../../src/sandbox/host-mounts.js';
import { processesMentioning, secondDockerdUnavailable } from '../setup/second-dockerd.js';

const CLI = join(import.meta.dirname, '../../bin/intercode.js');
const engine = await probeEngine();

function setup(args: string[], env: NodeJS.ProcessEnv = process.env, prefix: string[] = []) {
  const [command, ...rest] = prefix.length > 0 ? prefix : [process.execPath];
  const run = spawnSync(command!, [...rest, ...(prefix.length > 0 ? [process.execPath] : []), CLI, 'setup', ...args], { encoding: 'utf8', env, timeout: 600_000 });
  const json = args.includes('--json') && run.stdout.trim() ? (JSON.parse(run.stdout) as SetupResult) : undefined;
  return { status: run.status, json, stdout: run.stdout, stderr: run.stderr };
}

/** A dockerd of the test's own, everything of it under `dir`. */
function layoutIn(dir: string): DockerdLayout {
  return {
    socket: join(dir, 'docker.sock'),
    configFile: join(dir, 'daemon.json'),
    logFile: join(dir, 'dockerd.log'),
    pidfile: join(dir, 'docker.pid'),
    dataRoot: join(dir, 'data'),
    execRoot: join(dir, 'exec'),
  };
}

describe('intercode setup (CLI)', () => {
  it.skipIf(!engine.ok && !IN_CI)('with an engine that answers: builds (or finds) the images and exits 0', () => {
    const { status, json, stderr } = setup(['--json']);
    expect(status, stderr).toBe(0);
    expect(json).toMatchObject({ ok: true, situation: 'engine-answers', commands: [] });
    expect(json!.steps.map((s) => s.id)).toEqual(['build-images']);
    // Built by this run, or already there (then a second run must say so too).
    expect(json!.steps[0]!.detail).toMatch(/^(already built|built in [\d.]+ s): bash: intercode-ts\/bash-testbed:[0-9a-f]{16}, sql: intercode-ts\/sql-data:[0-9a-f]{16}, python: intercode-ts\/python:[0-9a-f]{16}, ctf: intercode-ts\/ctf:[0-9a-f]{16}, jq: intercode-ts\/bash:[0-9a-f]{16}$/);
    const again = setup(['--json']);
    expect(again.json!.steps.map((s) => [s.id, s.status])).toEqual([['build-images', 'skipped']]);
    expect(stderr).toContain('[setup] [1/1] build the sandbox images of bash, sql, python, ctf, jq');
  });

  it('with a DOCKER_HOST that does not answer: prints the commands and exits 1', () => {
    const { status, json } = setup(['--json'], { ...process.env, DOCKER_HOST: 'unix:///tmp/ic-setup-no-such.sock' });
    expect(status).toBe(1);
    expect(json).toMatchObject({ ok: false, situation: 'docker-host-unreachable', steps: [] });
    expect(json!.commands[0]).toContain('docker -H unix:///tmp/ic-setup-no-such.sock info');
    const text = setup([], { ...process.env, DOCKER_HOST: 'unix:///tmp/ic-setup-no-such.sock' });
    expect(text.status).toBe(1);
    expect(text.stdout).toContain('setup cannot go on: DOCKER_HOST=unix:///tmp/ic-setup-no-such.sock does not answer (/tmp/ic-setup-no-such.sock does not exist); setup starts engines only on this machine\'s default socket\nrun:\n  docker -H unix:///tmp/ic-setup-no-such.sock info');
  });

  it.skipIf(process.getuid?.() !== 0 || !engine.ok || !existsSync('/usr/bin/setpriv'))('as a user outside the docker group: says how to join it', () => {
    const env = { PATH: process.env.PATH ?? '', HOME: '/tmp' };
    const { status, json, stderr } = setup(['--json'], env, ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups']);
    expect(status, stderr).toBe(1);
    expect(json).toMatchObject({ ok: false, situation: 'permission-denied' });
    expect(json!.commands[0]).toBe('sudo usermod -aG docker "$USER"');
  });
});

const cannotStart = secondDockerdUnavailable();
describe.skipIf(!!cannotStart && !IN_CI)('setup install-and-start on an engine of its own', () => {
  let dir: string | undefined;
  afterAll(async () => {
    if (!dir) return;
    const pid = Number(existsSync(join(dir, 'docker.pid')) ? readFileSync(join(dir, 'docker.pid'), 'utf8') : NaN);
    if (pid > 0) {
      try {
        process.kill(pid, 'SIGTERM');
        for (let waited = 0; existsSync(`/proc/${pid}`) && waited < 30_000; waited += 200) await new Promise((r) => setTimeout(r, 200));
      } catch {
        // gone already
      }
    }
    for (const { pid: left } of processesMentioning(`${dir}/`)) process.kill(left, 'SIGKILL');
    for (const mount of mountPointsUnder(dir)) spawnSync('umount', ['-l', mount]);
    await rm(dir, { recursive: true, force: true });
    expect(processesMentioning(`${dir}/`)).toEqual([]);
  });

  it('packages present, runsc merged into daemon.json, dockerd started and answering; run again: nothing to do', async () => {
    if (cannotStart) throw new Error(cannotStart);
    dir = await mkdtemp('/tmp/ic-setup-');
    const layout: DockerdLayout = layoutIn(dir);
    await writeFile(layout.configFile, '{"log-level": "warn"}\n');
    const osRelease = join(dir, 'os-release');
    await writeFile(osRelease, 'ID=debian\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n');
    const facts = await probeHost({ osReleasePath: osRelease, defaultSocket: layout.socket, pidfile: layout.pidfile, env: { PATH: process.env.PATH ?? '' } });
    const plan = planSetup(facts, { layout, images: false });
    expect(plan.situation).toBe('install-and-start');
    const lines: string[] = [];
    const result = await runSetup(facts, plan, (line) => lines.push(line), layout);
    expect(result.ok, JSON.stringify(result)).toBe(true);
    expect(result.endpoint).toBe(`unix://${layout.socket}`);
    expect(result.steps.map((s) => s.id)).toEqual(['engine-packages', 'runsc-runtime', 'start-dockerd']);
    expect(result.steps.map((s) => s.status)).toEqual([result.steps[0]!.status, 'done', 'done']);
    expect(JSON.parse(readFileSync(layout.configFile, 'utf8'))).toEqual({ 'log-level': 'warn', runtimes: { runsc: { path: '/usr/bin/runsc', runtimeArgs: ['--network=none'] } } });
    expect(lines.some((l) => l.includes(`dockerd started (pid`) && l.includes(layout.logFile))).toBe(true);

    const info = (await new Docker({ socketPath: layout.socket }).info()) as { Runtimes: Record<string, unknown>; DockerRootDir: string };
    expect(Object.keys(info.Runtimes)).toContain('runsc');
    expect(info.DockerRootDir).toBe(layout.dataRoot);

    const again = await runSetup(facts, planSetup(facts, { layout, images: false }), () => undefined, layout);
    expect(again.steps.map((s) => [s.id, s.status])).toEqual([['engine-packages', 'skipped'], ['runsc-runtime', 'skipped'], ['start-dockerd', 'skipped']]);
  });
});

describe('setup steps on their own', () => {
  it.skipIf(!existsSync('/usr/bin/dpkg-query'))('missingPackages asks dpkg', () => {
    expect(missingPackages(['bash', 'coreutils', 'ic-no-such-package'])).toEqual(['ic-no-such-package']);
  });

  it.skipIf(!!cannotStart)('a dockerd that cannot start fails the step with the end of its log', async () => {
    const dir = await mkdtemp('/tmp/ic-setup-bad-');
    try {
      const layout: DockerdLayout = layoutIn(dir);
      await writeFile(layout.configFile, '{"runtimes": ');
      const facts = await probeHost({ defaultSocket: layout.socket, pidfile: layout.pidfile });
      const failure = await startDockerdStep(30_000).run({ facts, layout, log: () => undefined }).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(SetupError);
      expect((failure as SetupError).message).toMatch(/^setup: start-dockerd: dockerd exited with 1; the end of .*dockerd\.log: .*daemon\.json/);
      expect((failure as SetupError).details.commands).toEqual([`tail -n 50 ${layout.logFile}`]);
    } finally {
      for (const { pid } of processesMentioning(`${dir}/`)) process.kill(pid, 'SIGKILL');
      for (const mount of mountPointsUnder(dir)) spawnSync('umount', ['-l', mount]);
      await rm(dir, { recursive: true, force: true });
    }
  });

  it.skipIf(!!cannotStart)('the dockerd command setup prints for a user starts an engine when a shell runs it', async () => {
    const dir = await mkdtemp('/tmp/ic-setup-cmd-');
    try {
      const layout: DockerdLayout = { socket: join(dir, 'docker.sock'), configFile: join(dir, 'daemon.json'), logFile: join(dir, 'dockerd.log'), pidfile: join(dir, 'docker.pid'), dataRoot: join(dir, 'data'), execRoot: join(dir, 'exec') };
      expect(spawnSync('sh', ['-c', dockerdCommand(layout)]).status).toBe(0);
      let answer = await pingEngine(`unix://${layout.socket}`, 1_000);
      for (let waited = 0; !answer.answers && waited < 60_000; waited += 250) {
        await new Promise((r) => setTimeout(r, 250));
        answer = await pingEngine(`unix://${layout.socket}`, 1_000);
      }
      expect(answer.answers, readFileSync(layout.logFile, 'utf8').slice(-500)).toBe(true);
    } finally {
      const pid = Number(existsSync(join(dir, 'docker.pid')) ? readFileSync(join(dir, 'docker.pid'), 'utf8') : NaN);
      if (pid > 0) {
        process.kill(pid, 'SIGTERM');
        for (let waited = 0; existsSync(`/proc/${pid}`) && waited < 30_000; waited += 200) await new Promise((r) => setTimeout(r, 200));
      }
      for (const { pid: left } of processesMentioning(`${dir}/`)) process.kill(left, 'SIGKILL');
      for (const mount of mountPointsUnder(dir)) spawnSync('umount', ['-l', mount]);
      await rm(dir, { recursive: true, force: true });
    }
  });
});
