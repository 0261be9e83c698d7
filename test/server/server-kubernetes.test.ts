/**
 * `intercode serve --engine k8s`: the server's sessions take pods from the warm pool on a
 * Kubernetes cluster, exactly as they take containers on Docker. The built-in bash golds
 * score 1 over /ws, a dropped connection gives its pod back to the pool at once, and closing
 * the server leaves no pod of its own (before the file's label clean-up runs).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { ENV_PLUGINS } from '../../envs/index.js';
import { releaseEngines } from '../../src/cli/engine-flag.js';
import { EnvServer, pooledEnvSlots } from '../../src/server/index.js';
import { loadCluster } from '../../src/sandbox/kubernetes/cluster.js';
import { EngineSet } from '../../src/sandbox/backends/engine-set.js';
import { probeEngine, requireEngine, skipWithoutEngine, startTestRun } from '../setup/docker.js';
import { kubernetesTestFile, requireCluster, skipWithoutCluster } from '../setup/kubernetes.js';
import { TestClient, until, startLoopbackServer } from './helpers.js';

const testRun = startTestRun();
const engine = await probeEngine();
const cluster = await kubernetesTestFile(testRun);
const log = (line: string) => console.log(line);

/** The names of this test run's pods that are not being deleted. */
async function livePods(): Promise<string[]> {
  const k = await loadCluster();
  const list = await k.core.listNamespacedPod({ namespace: k.namespace, labelSelector: `io.intercode-ts.test=${testRun}` });
  return list.items.filter((p) => !p.metadata?.deletionTimestamp).map((p) => p.metadata!.name!);
}

describe.skipIf(skipWithoutEngine(engine, 'server on Kubernetes') || skipWithoutCluster(cluster, 'server on Kubernetes'))('serve --engine k8s', () => {
  let server: EnvServer | undefined;
  let engines: EngineSet | undefined;
  afterAll(async () => {
    await server?.close();
    if (engines) releaseEngines(engines, log);
  }, 120_000);

  it('bash golds score 1 over /ws on pods; a dropped session gives its pod back; close leaves no pod', async () => {
    requireEngine(engine);
    requireCluster(cluster).close();
    const cli = ENV_PLUGINS.find((c) => c.name === 'bash')!;
    engines = new EngineSet([{ endpoint: 'k8s', weight: 1 }], { log });
    const envs = await cli.createEnvs({}, 2, { purpose: 'serve', log, engines });
    const slots = pooledEnvSlots('bash', envs);
    await slots.ready();
    server = await startLoopbackServer(slots, 'bash', { log });
    expect((await livePods()).length).toBeGreaterThan(0);

    const client = new TestClient(server.url);
    await client.opened;
    for (let taskId = 0; taskId < 3; taskId++) {
      const reset = await client.request({ type: 'reset', data: { task_id: taskId } });
      expect(reset.type, JSON.stringify(reset.data)).toBe('observation');
      let last = reset;
      for (const code of cli.goldActions(envs[0]!.tasks[taskId]!)) {
        last = await client.request({ type: 'step', data: { code } });
        expect(last.type, JSON.stringify(last.data)).toBe('observation');
      }
      expect(last.data).toMatchObject({ reward: 1, done: true });
    }

    // A second session mid-episode, dropped without a close frame: its slot comes back.
    const dropped = new TestClient(server.url);
    await dropped.opened;
    expect((await dropped.request({ type: 'reset', data: { task_id: 3 } })).type).toBe('observation');
    expect((await dropped.request({ type: 'step', data: { code: 'touch /tmp/left-behind' } })).type).toBe('observation');
    dropped.ws.terminate();
    client.send({ type: 'close' });
    await until(() => server!.leases.active === 0 && slots.inUse === 0);

    // The next session on a returned pod starts clean.
    const next = new TestClient(server.url);
    await next.opened;
    expect((await next.request({ type: 'reset', data: { task_id: 4 } })).type).toBe('observation');
    const probe = await next.request({ type: 'step', data: { code: 'ls -a /tmp' } });
    expect(probe.data).toMatchObject({ observation: { output: expect.not.stringContaining('left-behind') } });
    next.send({ type: 'close' });
    await until(() => server!.leases.active === 0 && slots.inUse === 0);

    await server.close();
    server = undefined;
    releaseEngines(engines, log);
    engines = undefined;
    await until(async () => (await livePods()).length === 0, 90_000);
  }, 600_000);
});
