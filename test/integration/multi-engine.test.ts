/**
 * Two Docker engines: the machine's engine and a second dockerd this test starts on its own
 * socket and data root (test/setup/second-dockerd.ts). Sandboxes spread 1:2 over them; the
 * second engine is killed mid-run (SIGKILL, as a crash) — its sandboxes report SANDBOX_LOST
 * and new ones go to the first engine — then restarted and used again; at the end it is
 * stopped and its data root deleted, and no container of this run is left on either engine.
 */
import type Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxError } from '../../src/errors.js';
import type { ImageRecipe } from '../../src/images/recipe.js';
import { connectEngine, defaultEndpoint } from '../../src/sandbox/docker/engine.js';
import { liveSandboxes } from '../../src/sandbox/lifecycle/registry.js';
import { EngineSandbox, MultiEngineRuntime } from '../../src/sandbox/backends/index.js';
import { ShellSession } from '../../src/sandbox/shell/shell-session.js';
import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS, type SandboxSpec } from '../../src/sandbox/types.js';
import { IN_CI, probeEngine, removeTestContainers, requireEngine, skipWithoutEngine, startTestRun, testContainers } from '../setup/docker.js';
import { SecondDockerd, processesMentioning, secondDockerdUnavailable } from '../setup/second-dockerd.js';

const testRun = startTestRun();
const engine = await probeEngine();
const noSecond = secondDockerdUnavailable();
const skip = skipWithoutEngine(engine, 'multi-engine tests') || (!IN_CI && noSecond !== undefined && (console.warn(`skipping multi-engine tests: ${noSecond}`), true));

/** A small image whose file tells which recipe made it; on the second engine it must arrive by copy. */
const PROBE_RECIPE: ImageRecipe = {
  repository: 'intercode-ts/multi-engine-probe',
  dockerfile: 'ARG BASE\nFROM ${BASE}\nCOPY marker /etc/intercode-probe\n',
  files: { marker: Buffer.from('multi-engine probe\n') },
  parent: 'base',
};

const lostCode = (error: unknown) => (error instanceof SandboxError ? error.code : String(error));

afterAll(async () => {
  await removeTestContainers(engine.ok ? engine.docker : undefined, testRun);
});

describe.skipIf(skip)('MultiEngineRuntime over two local engines', () => {
  let first: Docker;
  let second: SecondDockerd;
  let runtime: MultiEngineRuntime;
  let spec: SandboxSpec;
  let probeExisted = false;
  const engineLog: string[] = [];

  const secondEndpoint = () => second.endpoint;
  const onEngine = (sandboxes: EngineSandbox[], endpoint: string) => sandboxes.filter((s) => s.endpoint === endpoint);
  const createMany = async (count: number) => (await Promise.all(Array.from({ length: count }, () => runtime.create(spec)))) as EngineSandbox[];

  async function waitFor(what: string, condition: () => boolean, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; engine log: ${engineLog.join(' | ')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  beforeAll(async () => {
    first = requireEngine(engine);
    if (noSecond) throw new Error(`cannot start a second Docker engine: ${noSecond}`);
    probeExisted = (await first.listImages({ filters: { reference: [`${PROBE_RECIPE.repository}`] } })).length > 0;
    second = await SecondDockerd.create();
    await second.start();
    runtime = await MultiEngineRuntime.connect(
      [
        { endpoint: defaultEndpoint(), weight: 1 },
        { endpoint: second.endpoint, weight: 2 },
      ],
      { healthIntervalMs: 300, pingTimeoutMs: 1_000, log: (line) => engineLog.push(line) },
    );
    const image = await runtime.ensureImage(PROBE_RECIPE, (line) => console.log(`[image] ${line}`));
    spec = { image, hostname: 'intercode', limits: { ...DEFAULT_LIMITS, memoryBytes: 64 * 1024 * 1024 }, capabilities: DEFAULT_CAPABILITIES };
  }, 600_000);

  afterAll(async () => {
    runtime?.close();
    if (!second) return;
    if (second.running) {
      const docker = await connectEngine(second.endpoint);
      for (const c of await testContainers(docker, testRun)) await docker.getContainer(c.Id).remove({ force: true });
    }
    const leftovers = await second.remove();
    expect(processesMentioning(`${second.dir}/`)).toEqual([]);
    // A shim of a killed daemon's container is ended by the restarted daemon; none should be left for remove().
    expect(leftovers).toEqual([]);
    if (!probeExisted) {
      for (const image of await first.listImages({ filters: { reference: [PROBE_RECIPE.repository] } })) {
        await first.getImage(image.Id).remove({ force: true }).catch(() => undefined);
      }
    }
  }, 120_000);

  it('puts the image on both engines, spreads sandboxes 1:2, loses the killed engine\'s sandboxes and uses it again when it is back', async () => {
    const engines = () => runtime.status();
    expect(engines().map((e) => e.up)).toEqual([true, true]);

    // Spread: 12 sandboxes created at once go 4 : 8, and each runs the copied image.
    const batch = await createMany(12);
    expect(onEngine(batch, defaultEndpoint())).toHaveLength(4);
    expect(onEngine(batch, secondEndpoint())).toHaveLength(8);
    expect(engines().map((e) => e.live)).toEqual([4, 8]);
    const secondDocker = await connectEngine(second.endpoint);
    expect(await testContainers(secondDocker, testRun, true)).toHaveLength(8);
    for (const sandbox of [batch[0]!, ...onEngine(batch, secondEndpoint()).slice(0, 2)]) {
      const result = await sandbox.exec(['cat', '/etc/intercode-probe']);
      expect(result.output.toString()).toBe('multi-engine probe\n');
    }
    const [victim] = onEngine(batch, secondEndpoint());
    const shell = await ShellSession.open(victim!);
    expect((await shell.run('echo before')).output).toContain('before');

    // The second engine crashes. Its containers' processes live on (their shims outlast the
    // daemon), but every call through the engine fails: the first marks the engine down.
    await second.stop('SIGKILL');
    for (const sandbox of onEngine(batch, secondEndpoint())) {
      const error = await sandbox.exec(['true']).then(() => undefined, (e: unknown) => e);
      expect(lostCode(error)).toBe('SANDBOX_LOST');
      expect((error as SandboxError).details.endpoint).toBe(second.endpoint);
    }
    expect(engines()[1]!.up).toBe(false);
    // A shell whose bytes do not go through the engine (FIFO transport) is ended with it.
    const stepError = await shell.run('echo after').then(() => undefined, (error: unknown) => error);
    expect(lostCode(stepError)).toBe('SANDBOX_LOST');
    for (const sandbox of onEngine(batch, defaultEndpoint())) expect((await sandbox.exec(['true'])).exitCode).toBe(0);
    const whileDown = await createMany(6);
    expect(onEngine(whileDown, defaultEndpoint())).toHaveLength(6);
    expect(engines().map((e) => e.live)).toEqual([10, 0]);

    // It comes back: its old containers are swept, and the next sandboxes go to it (10 : 0 at weights 1 : 2).
    await second.start();
    await waitFor('the second engine to be used again', () => engines()[1]!.up);
    expect(await testContainers(secondDocker, testRun)).toEqual([]);
    const afterReturn = await createMany(6);
    expect(onEngine(afterReturn, secondEndpoint())).toHaveLength(6);
    for (const sandbox of onEngine(afterReturn, secondEndpoint())) expect((await sandbox.exec(['cat', '/etc/intercode-probe'])).exitCode).toBe(0);
    // Sandboxes lost in the crash stay lost, though their engine answers again.
    expect(lostCode(await victim!.exec(['true']).then(() => undefined, (e: unknown) => e))).toBe('SANDBOX_LOST');
    expect(engines()[1]!.downs).toBe(1);

    // A sandbox killed from outside on an engine that answers is lost alone; its engine stays up.
    const killed = onEngine(whileDown, defaultEndpoint())[0]!;
    await first.getContainer(killed.id).kill();
    const killedError = await killed.exec(['true']).then(() => undefined, (e: unknown) => e);
    expect(lostCode(killedError)).toBe('SANDBOX_LOST');
    expect((killedError as SandboxError).details.endpoint).toBeUndefined();
    expect(engines().map((e) => [e.up, e.downs])).toEqual([[true, 0], [true, 1]]);

    // Everything goes away: destroying a lost sandbox only lets go of it.
    await Promise.all([...batch, ...whileDown, ...afterReturn].map((s) => s.destroy()));
    expect(engines().map((e) => e.live)).toEqual([0, 0]);
    expect(liveSandboxes.size).toBe(0);
    expect(await testContainers(first, testRun)).toEqual([]);
    expect(await testContainers(secondDocker, testRun)).toEqual([]);
    expect(engineLog.some((line) => /stopped answering; 8 sandbox\(es\) on it lost/.test(line))).toBe(true);
  }, 300_000);

  it('fails a create with SANDBOX_UNAVAILABLE naming the engines when none answers', async () => {
    const alone = await MultiEngineRuntime.connect([{ endpoint: second.endpoint, weight: 1 }], { healthIntervalMs: 60_000, pingTimeoutMs: 1_000 });
    try {
      await second.stop('SIGKILL');
      const error = await alone.create(spec).then(() => undefined, (e: unknown) => e);
      expect(lostCode(error)).toBe('SANDBOX_UNAVAILABLE');
      expect((error as SandboxError).message).toContain(`${second.endpoint} down`);
    } finally {
      alone.close();
    }
  }, 120_000);
});
