/**
 * The Kubernetes runtime itself: what a sandbox pod is allowed (checked from inside, as an
 * agent would probe it), exec and files over the exec stream, changes() from the in-pod
 * listing (a forged mtime is caught by the ctime), lost pods as typed errors, cleanup and
 * crash reaping by label, and the cluster check `doctor` uses. Unit parts need no cluster.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { DoctorReport } from '../../src/doctor/index.js';
import { SandboxError } from '../../src/errors.js';
import { manifestChanges } from '../../src/sandbox/file-manifest.js';
import { checkCluster, loadCluster, parseClusterTarget, type Cluster } from '../../src/sandbox/kubernetes/cluster.js';
import { parseExecStatus } from '../../src/sandbox/kubernetes/exec-stream.js';
import { KubernetesRuntime } from '../../src/sandbox/kubernetes/kubernetes-sandbox.js';
import { cleanupPods } from '../../src/sandbox/kubernetes/pod-cleanup.js';
import { whyNotRunning } from '../../src/sandbox/kubernetes/pod-watch.js';
import { podRunLabelValue, sandboxPod, type PodOptions } from '../../src/sandbox/kubernetes/pod-spec.js';
import { parseEngineTargets } from '../../src/sandbox/backends/endpoints.js';
import { podRuntime } from '../../src/sandbox/backends/kubernetes-backend.js';
import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS, type Sandbox, type SandboxSpec } from '../../src/sandbox/types.js';
import { HARNESS_CAPABILITY } from '../../src/sandbox/harness-capability.js';
import { bashTestbedImage, probeEngine, requireEngine, skipWithoutEngine, startTestRun } from '../setup/docker.js';
import { kubernetesTestFile, requireCluster, skipWithoutCluster } from '../setup/kubernetes.js';

const testRun = startTestRun();
const engine = await probeEngine();
const cluster = await kubernetesTestFile(testRun);

describe('Kubernetes runtime, without a cluster', () => {
  const spec: SandboxSpec = { image: 'img:1', hostname: 'intercode', limits: DEFAULT_LIMITS, capabilities: DEFAULT_CAPABILITIES };

  it('parses k8s engine values and rejects mixing them with Docker engines', () => {
    expect(parseClusterTarget('k8s')).toEqual({});
    expect(parseClusterTarget('k8s:ctx/ns-1')).toEqual({ context: 'ctx', namespace: 'ns-1' });
    expect(parseClusterTarget('k8s:/ns')).toEqual({ namespace: 'ns' });
    expect(() => parseClusterTarget('k8s:ctx/Bad_NS')).toThrow(/--engine must be k8s/);
    expect(parseEngineTargets(['k8s:ctx'], 'unix:///x')).toEqual([{ endpoint: 'k8s:ctx', weight: 1 }]);
    expect(() => parseEngineTargets(['k8s', 'unix:///var/run/docker.sock'], 'unix:///x')).toThrow(/cannot be combined/);
  });

  it('a pod is bare, tokenless, unprivileged, limited, labelled and deadlined', () => {
    const pod = sandboxPod(spec, { runtimeClassName: 'gvisor', activeDeadlineSeconds: 60 });
    const container = pod.spec!.containers[0]!;
    expect(pod.spec).toMatchObject({ restartPolicy: 'Never', automountServiceAccountToken: false, enableServiceLinks: false, runtimeClassName: 'gvisor', activeDeadlineSeconds: 60, securityContext: { seccompProfile: { type: 'RuntimeDefault' } } });
    expect(container.securityContext).toEqual({ allowPrivilegeEscalation: false, privileged: false, capabilities: { drop: ['ALL'], add: [...DEFAULT_CAPABILITIES, HARNESS_CAPABILITY] } });
    expect(container.resources).toEqual({ requests: { cpu: '10m', memory: '32Mi' }, limits: { cpu: '1000m', memory: '512Mi' } });
    expect(container.imagePullPolicy).toBe('Never');
    expect(pod.metadata!.labels).toMatchObject({ 'io.intercode-ts.owner': 'intercode-ts', 'io.intercode-ts.run': podRunLabelValue(), 'io.intercode-ts.test': testRun });
    expect(podRunLabelValue()).toMatch(/^[A-Za-z0-9][A-Za-z0-9._-]*$/);
  });

  it('--runtime (SandboxSettings.ociRuntime) reaches the pods as their RuntimeClass; runc is the node\'s default', () => {
    const classOf = (runtime: string | undefined) => {
      const made = new KubernetesRuntime({ namespace: 'ns' } as unknown as Cluster, podRuntime(runtime === undefined ? {} : { ociRuntime: runtime }));
      return sandboxPod(spec, (made as unknown as { options: PodOptions }).options).spec!.runtimeClassName;
    };
    expect(classOf('gvisor')).toBe('gvisor');
    expect(classOf('runc')).toBeUndefined();
    expect(classOf(undefined)).toBeUndefined();
  });

  it('says why a pod is not running yet: its phase, what is not true of it, its container and its newest events', () => {
    const pod = {
      status: {
        phase: 'Pending',
        conditions: [
          { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/1 nodes are available: 1 node(s) had taint {node.kubernetes.io/not-ready: }' },
          { type: 'Initialized', status: 'True' },
        ],
      },
    };
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
    const events = [
      { reason: 'FailedScheduling', count: 3, message: 'late', lastTimestamp: at(30), metadata: {}, involvedObject: {} },
      { reason: 'Old', message: 'early', lastTimestamp: at(1), metadata: {}, involvedObject: {} },
    ];
    expect(whyNotRunning(pod, events)).toBe('pod pending; PodScheduled Unschedulable: 0/1 nodes are available: 1 node(s) had taint {node.kubernetes.io/not-ready: }; events: Old: early; FailedScheduling ×3: late');
    const waiting = { status: { phase: 'Pending', containerStatuses: [{ name: 'sandbox', image: 'i', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'ContainerCreating' } } }] } };
    expect(whyNotRunning(waiting, [])).toBe('pod pending; container waiting (ContainerCreating); no events for it');
    expect(whyNotRunning(undefined, [])).toBe('the pod is not listed');
  });

  it('reads exit codes from the status channel', () => {
    expect(parseExecStatus('{"status":"Success"}')).toEqual({ exitCode: 0 });
    expect(parseExecStatus('{"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"42"}]}}')).toEqual({ exitCode: 42 });
    expect(parseExecStatus('{"status":"Failure","message":"container not found"}')).toEqual({ exitCode: null, message: 'container not found' });
  });

  it('compares listings: added, modified (any field, ctime included), deleted subtrees once, a type change as both', () => {
    const before = new Map([
      ['/a', 'f 644 0 0 1 1.0 1.0 10 '],
      ['/d', 'd 755 0 0 4096 1.0 1.0 11 '],
      ['/d/x', 'f 644 0 0 1 1.0 1.0 12 '],
      ['/e', 'f 644 0 0 1 1.0 1.0 13 '],
      ['/t', 'd 755 0 0 4096 1.0 1.0 14 '],
    ]);
    const after = new Map([
      ['/a', 'f 644 0 0 1 1.0 2.0 10 '],
      ['/e', 'f 644 0 0 1 1.0 1.0 13 '],
      ['/n', 'f 644 0 0 1 1.0 1.0 15 '],
      ['/t', 'f 644 0 0 1 1.0 2.0 14 '],
    ]);
    expect(manifestChanges(before, after)).toEqual([
      { path: '/a', kind: 'modified' },
      { path: '/n', kind: 'added' },
      { path: '/t', kind: 'added' },
      { path: '/t', kind: 'deleted' },
      { path: '/d', kind: 'deleted' },
    ]);
  });
});

describe.skipIf(skipWithoutEngine(engine, 'Kubernetes runtime tests') || skipWithoutCluster(cluster, 'runtime tests'))('Kubernetes runtime on a cluster', () => {
  let runtime: KubernetesRuntime;
  let spec: SandboxSpec;
  let sandbox: Sandbox;

  beforeAll(async () => {
    runtime = requireCluster(cluster);
    spec = { image: await bashTestbedImage(requireEngine(engine)), hostname: 'intercode', limits: DEFAULT_LIMITS, capabilities: DEFAULT_CAPABILITIES };
    sandbox = await runtime.create(spec);
  }, 300_000);

  it('a process sees what it would in a Docker sandbox: no cluster variables, token, network files or extra privileges', async () => {
    // An agent's process (confined): the spec's capabilities exactly; the harness's own exec keeps CAP_SETPCAP (0x100) besides.
    const probe = await sandbox.exec(['bash', '-c', 'env | grep -c KUBERNETES_; ls /var/run/secrets /run/secrets 2>&1 | grep -c kubernetes.io; wc -c < /etc/hosts; wc -c < /etc/resolv.conf; cat /etc/hostname; grep -E "^(CapEff|CapBnd|NoNewPrivs|Seccomp):" /proc/self/status | tr -s "\\t " " "'], { confined: true });
    expect(probe.output.toString()).toBe('0\n0\n0\n0\nintercode\nCapEff: 00000000000000fb\nCapBnd: 00000000000000fb\nNoNewPrivs: 1\nSeccomp: 2\n');
    const harness = await sandbox.exec(['bash', '-c', 'grep -E "^CapEff:" /proc/self/status | tr -s "\\t " " "']);
    expect(harness.output.toString()).toBe('CapEff: 00000000000001fb\n');
  });

  it('exec: exit codes, working directory, environment, time limit', async () => {
    expect((await sandbox.exec(['bash', '-c', 'exit 7'])).exitCode).toBe(7);
    const located = await sandbox.exec(['bash', '-c', 'echo "$PWD $GREETING"'], { workdir: '/tmp', env: { GREETING: 'hi there' } });
    expect(located.output.toString()).toBe('/tmp hi there\n');
    const slow = await sandbox.exec(['sleep', '30'], { timeoutMs: 500 });
    expect(slow).toMatchObject({ timedOut: true, exitCode: null });
  });

  it('files round-trip as tar over exec, owners and modes kept', async () => {
    await sandbox.exec(['bash', '-c', 'mkdir -p /tmp/src/sub && echo one > /tmp/src/sub/f && chmod 640 /tmp/src/sub/f && chown 12:34 /tmp/src/sub/f']);
    const archive = await sandbox.getArchive('/tmp/src');
    await sandbox.putArchive(archive, '/opt');
    const copied = await sandbox.exec(['bash', '-c', 'stat -c "%a %u %g" /opt/src/sub/f; cat /opt/src/sub/f']);
    expect(copied.output.toString()).toBe('640 12 34\none\n');
  });

  it('changes(): a file rewritten to the same size with its mtime put back is still found', async () => {
    const fresh = await runtime.create(spec);
    try {
      expect(await fresh.changes()).toEqual([]);
      await fresh.exec(['bash', '-c', 'f=/etc/debian_version; [ -e $f ] || f=/etc/issue; touch -r $f /tmp/ref; tr "a-z0-9" "b-z0-9a" < $f > /tmp/x; cat /tmp/x > $f; touch -r /tmp/ref $f; rm /tmp/x /tmp/ref; echo $f > /dev/null']);
      const changed = (await fresh.changes()).map((c) => `${c.kind} ${c.path}`);
      expect(changed.some((c) => c === 'modified /etc/debian_version' || c === 'modified /etc/issue')).toBe(true);
    } finally {
      await fresh.destroy();
    }
  }, 120_000);

  it('a pod deleted from outside: every call is SANDBOX_LOST; destroy stays idempotent', async () => {
    const doomed = await runtime.create(spec);
    const k = await loadCluster();
    await k.core.deleteNamespacedPod({ name: doomed.id, namespace: k.namespace, gracePeriodSeconds: 0 });
    const error = await (async () => {
      for (let i = 0; i < 40; i++) {
        const outcome = await doomed.exec(['true']).then(() => undefined, (e: unknown) => e);
        if (outcome) return outcome;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(SandboxError);
    expect((error as SandboxError).code).toBe('SANDBOX_LOST');
    await doomed.destroy();
    await doomed.destroy();
  }, 120_000);

  it('--runtime names a RuntimeClass: one the cluster lacks fails the creation with the API\'s reason', async () => {
    const other = new KubernetesRuntime(await loadCluster(), podRuntime({ ociRuntime: 'no-such-class' }));
    const error = await other.create(spec).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SandboxError);
    expect((error as Error).message).toMatch(/^Could not create a sandbox pod from .*RuntimeClass "no-such-class" not found/);
    other.watch.close();
  }, 120_000);

  it('a watch that stalls without ending: at the time limit the pod is read itself, and a running one is used', async () => {
    const stalled = new KubernetesRuntime(await loadCluster(), { startTimeoutMs: 10_000 });
    await stalled.watch.start();
    stalled.watch.close(); // open no more: the watch now sees nothing, as a stalled connection would
    const box = await stalled.create(spec);
    try {
      expect((await box.exec(['echo', 'ran'])).output.toString()).toBe('ran\n');
    } finally {
      await box.destroy();
    }
  }, 120_000);

  it('a pod not running at the time limit: the error says how long and what the pod shows', async () => {
    const hasty = new KubernetesRuntime(await loadCluster(), { startTimeoutMs: 1 });
    const error = await hasty.create(spec).catch((e: unknown) => e);
    hasty.watch.close();
    expect(error).toBeInstanceOf(SandboxError);
    expect((error as Error).message).toMatch(/^Could not start a sandbox pod from \S+: not running after 0\.001 s \(pod pending; .*(no events for it|events: )/);
  }, 120_000);

  it('an image the node lacks is IMAGE_MISSING', async () => {
    await expect(runtime.create({ ...spec, image: 'intercode-ts/no-such-image:0' })).rejects.toMatchObject({ code: 'IMAGE_MISSING' });
  }, 120_000);

  it('crash reaping deletes the pods of a dead run on this host and keeps live ones', async () => {
    const k = await loadCluster();
    const body = sandboxPod(spec);
    body.metadata!.labels!['io.intercode-ts.run'] = podRunLabelValue(2 ** 22 + 12345);
    const orphan = await k.core.createNamespacedPod({ namespace: k.namespace, body });
    expect(await cleanupPods(k, { testRun, deadRunsOnly: true })).toBe(1);
    const names = (await k.core.listNamespacedPod({ namespace: k.namespace, labelSelector: `io.intercode-ts.test=${testRun}` })).items.filter((p) => !p.metadata?.deletionTimestamp).map((p) => p.metadata!.name);
    expect(names).not.toContain(orphan.metadata!.name);
    expect(names).toContain(sandbox.id);
  }, 60_000);

  it('checkCluster (for doctor): reachable, version, may create pods', async () => {
    const check = await checkCluster();
    expect(check).toMatchObject({ reachable: true, canCreatePods: true });
    expect(check.version).toMatch(/^v1\./);
    expect(check.problem).toBeUndefined();
    // Every node's kubelet pids limit was read (a number, -1 or 0 when it sets none).
    const nodes = (await (await loadCluster()).core.listNode()).items.map((n) => n.metadata!.name!);
    expect(Object.keys(check.podPidsLimits ?? {}).sort()).toEqual(nodes.sort());
    for (const node of nodes) expect(typeof check.podPidsLimits![node], node).toBe('number');
    // Every node of a healthy cluster can take a pod.
    expect(check).toMatchObject({ nodesAvailable: nodes.length, nodesUnavailable: [] });
    // The same through the CLI: `doctor --engine k8s` adds an ok cluster line, then the pids line.
    const cli = spawnSync(process.execPath, [join(import.meta.dirname, '../../bin/intercode.js'), 'doctor', '--json', '--engine', 'k8s'], { encoding: 'utf8', timeout: 120_000 });
    const report = JSON.parse(cli.stdout) as DoctorReport;
    expect(report.checks.slice(-2).map((c) => c.id)).toEqual(['cluster', 'cluster-pids']);
    expect(report.checks.at(-2)).toMatchObject({ status: 'ok', summary: expect.stringMatching(/^Kubernetes v1\.\d+.*: pods may be created in namespace /) });
    const unlimited = nodes.filter((node) => check.podPidsLimits![node]! <= 0);
    expect(report.checks.at(-1)).toMatchObject({ status: unlimited.length > 0 ? 'warn' : 'ok', summary: expect.stringContaining(nodes[0]!) });
  }, 120_000);
});
