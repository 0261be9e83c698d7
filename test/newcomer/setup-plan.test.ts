/**
 * `intercode setup`'s decision, one test per situation, from facts probed on this machine
 * (probeHost pointed at files and sockets of the test's own: an os-release file, a socket
 * that does not exist, a pidfile naming a live process) — and the daemon.json merge.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SetupError } from '../../src/errors.js';
import { RUNSC_ARGS, SYSTEM_DOCKERD, TEST_TOOL_PACKAGES, mergeRuntime, missingPackages, planSetup, probeHost, type SetupPlan } from '../../src/setup/index.js';

let dir: string;
let debian: string;
let fedora: string;
let missingSocket: string;
const asRoot = process.getuid?.() === 0;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ic-setup-plan-'));
  debian = join(dir, 'os-release-debian');
  fedora = join(dir, 'os-release-fedora');
  await writeFile(debian, 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\n');
  await writeFile(fedora, 'PRETTY_NAME="Fedora Linux 40"\nID=fedora\n');
  missingSocket = join(dir, 'no-engine.sock');
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const env = (extra: Record<string, string> = {}) => ({ PATH: process.env.PATH ?? '', ...extra });
const stepIds = (plan: SetupPlan) => ('steps' in plan ? plan.steps.map((s) => s.id) : []);
const commands = (plan: SetupPlan) => ('commands' in plan ? plan.commands : []);

describe('setup plan from probed facts', () => {
  it('an engine that answers: only the images are built', async () => {
    const facts = await probeHost();
    if (!facts.engine.answers) return expect(process.env.CI).not.toBe('true');
    const plan = planSetup(facts, { images: async () => ({ tags: [], built: false }) });
    expect(plan.situation).toBe('engine-answers');
    expect(stepIds(plan)).toEqual(['build-images']);
  });

  it('test tools asked for by a user who is not root: a step that says which sudo command installs what is missing', async () => {
    const facts = { ...(await probeHost({ osReleasePath: debian, env: env() })), root: false, engine: { answers: true as const, serverVersion: 'probe' } };
    const plan = planSetup(facts, { withTestTools: true });
    expect(stepIds(plan)).toEqual(['test-tools']);
    const step = (plan as Extract<SetupPlan, { steps: unknown }>).steps[0]!;
    const missing = missingPackages([...TEST_TOOL_PACKAGES]);
    const outcome = await step.run({ facts, layout: SYSTEM_DOCKERD, log: () => undefined }).catch((error: unknown) => error);
    if (missing.length === 0) expect(outcome).toMatchObject({ status: 'skipped' });
    else expect(outcome).toMatchObject({ details: { commands: [`sudo apt-get install -y ${missing.join(' ')}`] } });
  });

  it.skipIf(!asRoot)('root on Debian with no engine: install, register runsc, start dockerd, build images', async () => {
    const facts = await probeHost({ osReleasePath: debian, env: env(), defaultSocket: missingSocket, pidfile: join(dir, 'none.pid') });
    expect(facts.engine).toMatchObject({ answers: false, reason: 'no-socket' });
    const plan = planSetup(facts, { images: async () => ({ tags: [], built: false }) });
    expect(plan.situation).toBe('install-and-start');
    expect(stepIds(plan)).toEqual(['engine-packages', 'runsc-runtime', 'start-dockerd', 'build-images']);
    expect(stepIds(planSetup(facts, { withTestTools: true }))).toEqual(['engine-packages', 'test-tools', 'runsc-runtime', 'start-dockerd']);
  });

  it('not root on Debian with no engine: the sudo commands', async () => {
    const facts = await probeHost({ osReleasePath: debian, env: env(), defaultSocket: missingSocket, uid: 1000, pidfile: join(dir, 'none.pid') });
    const plan = planSetup(facts);
    expect(plan.situation).toBe('needs-root');
    expect(commands(plan)[0]).toMatch(facts.commands.dockerd ? /^sudo sh -c 'nohup dockerd --bridge=none --iptables=false --ip-masq=false >\/var\/log\/intercode-dockerd\.log 2>&1 &'$/ : /^sudo apt-get install -y docker\.io debootstrap runsc gcc libc6-dev libseccomp-dev btrfs-progs/);
    expect(commands(plan).at(-1)).toBe('# or let setup do it all: sudo npx intercode setup');
  });

  it('not Debian or Ubuntu: install Docker for the system, then start it', async () => {
    const facts = await probeHost({ osReleasePath: fedora, env: env(), defaultSocket: missingSocket, pidfile: join(dir, 'none.pid') });
    const plan = planSetup(facts);
    expect(plan.situation).toBe('not-debian');
    expect(plan.summary).toContain('Fedora Linux 40');
    expect(commands(plan)).toContain("sudo sh -c 'nohup dockerd --bridge=none --iptables=false --ip-masq=false >/var/log/intercode-dockerd.log 2>&1 &'");
  });

  it('a DOCKER_HOST that does not answer: check that engine, or unset it', async () => {
    const facts = await probeHost({ osReleasePath: debian, env: env({ DOCKER_HOST: `unix://${missingSocket}` }) });
    const plan = planSetup(facts);
    expect(plan.situation).toBe('docker-host-unreachable');
    expect(commands(plan)[0]).toBe(`docker -H unix://${missingSocket} info   # see why that engine does not answer, and start it there`);
  });

  it('a tcp DOCKER_HOST nothing listens on is refused, not hung', async () => {
    const began = Date.now();
    const facts = await probeHost({ env: env({ DOCKER_HOST: 'tcp://127.0.0.1:9' }) });
    expect(facts.engine).toMatchObject({ answers: false, reason: 'refused' });
    expect(planSetup(facts).situation).toBe('docker-host-unreachable');
    expect(Date.now() - began).toBeLessThan(5_000);
  });

  it('a rootless engine that is down: start the user service', async () => {
    const facts = await probeHost({ osReleasePath: debian, env: env({ DOCKER_HOST: 'unix:///run/user/1000/docker.sock' }) });
    const plan = planSetup(facts);
    expect(plan.situation).toBe('rootless-engine-down');
    expect(commands(plan)[0]).toBe('systemctl --user start docker');
  });

  it('dockerd alive but silent: read its log, do not start a second one', async () => {
    const pidfile = join(dir, 'live.pid');
    await writeFile(pidfile, `${process.pid}\n`);
    const facts = await probeHost({ osReleasePath: debian, env: env(), defaultSocket: missingSocket, pidfile });
    expect(facts.dockerdPid).toBe(process.pid);
    const plan = planSetup(facts);
    expect(plan.situation).toBe('dockerd-not-answering');
    expect(commands(plan)[0]).toMatch(/^tail -n 50 \/var\/log\/intercode-dockerd\.log/);
  });
});

describe('daemon.json merge', () => {
  it('adds runsc and keeps every other key', () => {
    const merged = mergeRuntime('{"log-level":"warn","runtimes":{"kata":{"path":"/k"}},"storage-driver":"overlay2"}', 'runsc', { path: '/usr/bin/runsc', runtimeArgs: RUNSC_ARGS });
    expect(JSON.parse(merged!)).toEqual({ 'log-level': 'warn', 'storage-driver': 'overlay2', runtimes: { kata: { path: '/k' }, runsc: { path: '/usr/bin/runsc', runtimeArgs: ['--network=none'] } } });
  });
  it('writes a new file when there is none, and nothing when runsc is there with its arguments', () => {
    const runsc = { path: '/usr/bin/runsc', runtimeArgs: RUNSC_ARGS };
    expect(JSON.parse(mergeRuntime(undefined, 'runsc', runsc)!)).toEqual({ runtimes: { runsc: { path: '/usr/bin/runsc', runtimeArgs: ['--network=none'] } } });
    expect(mergeRuntime('{"runtimes":{"runsc":{"path":"/opt/runsc","runtimeArgs":["--debug","--network=none"]}}}', 'runsc', runsc)).toBeUndefined();
  });
  it('adds the missing --network=none to a runsc registered without it, keeping its path and arguments', () => {
    const merged = mergeRuntime('{"runtimes":{"runsc":{"path":"/opt/runsc","runtimeArgs":["--debug"]}}}', 'runsc', { path: '/usr/bin/runsc', runtimeArgs: RUNSC_ARGS });
    expect(JSON.parse(merged!)).toEqual({ runtimes: { runsc: { path: '/opt/runsc', runtimeArgs: ['--debug', '--network=none'] } } });
  });
  it('refuses a file that is not a JSON object, naming it', () => {
    expect(() => mergeRuntime('{"runtimes": ', 'runsc', { path: '/r' }, '/etc/docker/daemon.json')).toThrow(SetupError);
    expect(() => mergeRuntime('{"runtimes": ', 'runsc', { path: '/r' }, '/etc/docker/daemon.json')).toThrow(/^setup: runsc-runtime: \/etc\/docker\/daemon\.json is not valid JSON/);
    expect(() => mergeRuntime('[1]', 'runsc', { path: '/r' })).toThrow(/does not hold a JSON object/);
    // A runsc entry that dockerd could not use is named, never merged into a broken file.
    expect(() => mergeRuntime('{"runtimes":{"runsc":"x"}}', 'runsc', { path: '/r', runtimeArgs: RUNSC_ARGS }, '/etc/docker/daemon.json')).toThrow(/daemon\.json: "runtimes\.runsc" is not a runtime/);
    expect(() => mergeRuntime('{"runtimes":{"runsc":{"runtimeArgs":[]}}}', 'runsc', { path: '/r' })).toThrow(/"runtimes\.runsc" is not a runtime/);
    expect(() => mergeRuntime('{"runtimes":{"runsc":{"path":"/r","runtimeArgs":"--debug"}}}', 'runsc', { path: '/r', runtimeArgs: RUNSC_ARGS })).toThrow(/"runtimes\.runsc\.runtimeArgs" is not a list of strings/);
  });
});
