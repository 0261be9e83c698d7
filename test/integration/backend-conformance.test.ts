/**
 * The conformance suite every sandbox backend passes (SANDBOX_BACKENDS: Docker, and
 * Kubernetes when a cluster answers): sandboxes created through the backend's descriptor
 * exec, attach, take and give archives, carry their labels (cleanup finds exactly them),
 * are gone once destroyed, and those of a crashed run are reaped; what the user set
 * (SandboxSettings) reaches them, and the environment's INTERCODE_RUNTIME and
 * INTERCODE_DISK_LIMIT_MIB are not read below the CLI.
 *
 * Docker runs on the local engine; Kubernetes on the cluster KUBECONFIG names (the test
 * cluster: ../shared/k8s/up.sh), skipped without one outside CI.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxError } from '../../src/errors.js';
import { packEntries } from '../../src/images/tar.js';
import { defaultEndpoint } from '../../src/sandbox/docker/engine.js';
import { backendOf } from '../../src/sandbox/backends/backends.js';
import { EngineSet } from '../../src/sandbox/backends/engine-set.js';
import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS, type Sandbox, type SandboxSettings, type SandboxSpec } from '../../src/sandbox/types.js';
import { bashTestbedImage, dockerTestFile, requireEngine, skipWithoutEngine, TEST_SANDBOX_SETTINGS } from '../setup/docker.js';
import { kubernetesTestFile, requireCluster, skipWithoutCluster } from '../setup/kubernetes.js';

const CHILD = fileURLToPath(new URL('./backend-conformance.child.ts', import.meta.url));
const { testRun, engine } = await dockerTestFile();
const cluster = await kubernetesTestFile(testRun);

const targets = [
  { name: 'Docker', endpoint: defaultEndpoint(), needs: () => undefined, skip: skipWithoutEngine(engine, 'the backend conformance suite') },
  { name: 'Kubernetes', endpoint: 'k8s', needs: () => requireCluster(cluster).close(), skip: skipWithoutEngine(engine, 'the backend conformance suite (images are built on the local engine)') || skipWithoutCluster(cluster, 'the backend conformance suite') },
];

describe.each(targets)('the $name backend', ({ endpoint, needs, skip }) => {
  const backend = backendOf(endpoint);
  let engines: EngineSet;
  let spec: SandboxSpec;
  const made: Sandbox[] = [];

  /** A sandbox of the backend's runtime, removed after the file. */
  async function sandbox(extra: Partial<SandboxSpec> = {}, set = engines): Promise<Sandbox> {
    const created = await (await set.runtime()).create({ ...spec, ...extra });
    made.push(created);
    return created;
  }

  beforeAll(async () => {
    if (skip) return;
    needs(); // a cluster that cannot run pods fails this file's cases at once, not each after its pods' time limit
    engines = new EngineSet([{ endpoint, weight: 1 }], { sandboxes: TEST_SANDBOX_SETTINGS });
    spec = { image: await bashTestbedImage(requireEngine(engine)), hostname: 'intercode', limits: DEFAULT_LIMITS, capabilities: DEFAULT_CAPABILITIES };
  }, 300_000);

  afterAll(async () => {
    await Promise.allSettled(made.map((s) => s.destroy()));
    engines?.close();
  }, 120_000);

  it.skipIf(skip)('is the one its --engine value names', () => {
    expect(backend.parseTarget(endpoint, '--engine')).toEqual({ endpoint, weight: 1 });
    expect(backendOf(endpoint)).toBe(backend);
  });

  it.skipIf(skip)('creates a sandbox that runs commands: output, exit codes, a time limit', async () => {
    const box = await sandbox();
    const ran = await box.exec(['bash', '-c', 'echo out; echo err >&2; exit 3']);
    expect(ran.exitCode).toBe(3);
    expect(ran.output.toString()).toContain('out');
    expect(ran.output.toString()).toContain('err');
    expect((await box.exec(['hostname'])).output.toString().trim()).toBe('intercode');
    const slow = await box.exec(['sleep', '30'], { timeoutMs: 500 });
    expect(slow.timedOut).toBe(true);
  }, 120_000);

  it.skipIf(skip)('attaches a process that reads what is written and ends', async () => {
    const box = await sandbox();
    const attached = await box.attach(['bash', '-c', 'read line; echo "got $line"']);
    const output: Buffer[] = [];
    const ended = new Promise<void>((resolve) => attached.listen({ output: (chunk) => output.push(chunk), exit: resolve }));
    attached.write('hello\n');
    await ended;
    expect(Buffer.concat(output).toString()).toContain('got hello');
    attached.close();
  }, 120_000);

  it.skipIf(skip)('takes an archive in and gives one out, contents and modes kept', async () => {
    const box = await sandbox();
    const tar = await packEntries([
      { name: 'conformance', type: 'directory', mode: 0o755 },
      { name: 'conformance/a.txt', type: 'file', mode: 0o640, content: Buffer.from('alpha\n') },
    ]);
    await box.putArchive(tar, '/tmp');
    expect((await box.exec(['cat', '/tmp/conformance/a.txt'])).output.toString()).toBe('alpha\n');
    expect((await box.exec(['stat', '-c', '%a %u', '/tmp/conformance/a.txt'])).output.toString().trim()).toBe('640 0');
    await box.exec(['bash', '-c', 'printf beta > /tmp/conformance/b.txt']);
    const out = await box.getArchive('/tmp/conformance/b.txt');
    expect(out.subarray(0, 100).toString().replace(/\0+$/, '')).toBe('b.txt');
    expect(out.includes(Buffer.from('beta'))).toBe(true);
  }, 120_000);

  it.skipIf(skip)('a destroyed sandbox is gone: its calls fail as SANDBOX_LOST, a second destroy is harmless', async () => {
    const box = await sandbox();
    await box.destroy();
    const error = await box.exec(['true']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SandboxError);
    await box.destroy();
  }, 120_000);

  it.skipIf(skip)('labels its sandboxes: a cleanup of this test run removes exactly the live ones', async () => {
    await Promise.allSettled(made.splice(0).map((s) => s.destroy()));
    const boxes = [await sandbox({ labels: { 'io.intercode-ts.conformance': 'yes' } }), await sandbox()];
    expect(boxes[0]!.spec.labels).toEqual({ 'io.intercode-ts.conformance': 'yes' });
    const removed = await backend.cleanup(endpoint, { images: false, deadRunsOnly: false, warmOnly: false, testRun });
    expect(removed.containers).toBe(2);
    expect(await boxes[0]!.exec(['true']).catch((e: unknown) => e)).toBeInstanceOf(SandboxError);
  }, 120_000);

  it.skipIf(skip)("reaps a crashed run's sandboxes, and only those", async () => {
    const live = await sandbox();
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, endpoint, spec.image], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve());
      child.once('exit', (code) => reject(new Error(`child exited (${code}) before ready: ${stderr}`)));
    });
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await gone;
    expect(await backend.reapCrashedRuns(endpoint, { testRun })).toBe(1);
    // This run's own sandbox is live: kept.
    expect((await live.exec(['true'])).exitCode).toBe(0);
    expect(await backend.reapCrashedRuns(endpoint, { testRun })).toBe(0);
  }, 180_000);

  it.skipIf(skip)('makes sandboxes with the settings it is given, never with INTERCODE_RUNTIME or INTERCODE_DISK_LIMIT_MIB', async () => {
    const saved = { runtime: process.env.INTERCODE_RUNTIME, disk: process.env.INTERCODE_DISK_LIMIT_MIB };
    process.env.INTERCODE_RUNTIME = 'no-such-runtime';
    process.env.INTERCODE_DISK_LIMIT_MIB = '32';
    const settings: SandboxSettings = { ...TEST_SANDBOX_SETTINGS, diskLimitBytes: 96 * 2 ** 20 };
    const set = new EngineSet(engines.targets, { sandboxes: settings });
    try {
      const runtime = await set.runtime();
      expect(runtime.ociRuntime).toBe(endpoint === 'k8s' ? undefined : settings.ociRuntime);
      const box = await sandbox({}, set);
      if (box.disk) {
        expect(box.disk.limitBytes).toBe(96 * 2 ** 20);
        // The file-size limit every Docker sandbox gets, in the shell's 1024-byte blocks.
        expect((await box.exec(['bash', '-c', 'ulimit -f'])).output.toString().trim()).toBe(String(96 * 1024));
      }
    } finally {
      set.close();
      for (const [key, value] of [['INTERCODE_RUNTIME', saved.runtime], ['INTERCODE_DISK_LIMIT_MIB', saved.disk]] as const) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  }, 120_000);
});
