/**
 * `intercode doctor`: the CLI on this machine's engine and without one (exit code and
 * --json), and each check's verdicts on the engine facts that decide them.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { clusterCheck, clusterPidsCheck, diskQuotaCheck, freeDiskCheck, mountOf, runtimesCheck, type DoctorReport } from '../../src/doctor/index.js';
import { IN_CI, probeEngine } from '../setup/docker.js';
import { nodeUnavailable } from '../../src/sandbox/kubernetes/cluster.js';

const CLI = join(import.meta.dirname, '../../bin/intercode.js');
const engine = await probeEngine();

function doctor(args: string[], env: NodeJS.ProcessEnv = process.env) {
  const run = spawnSync(process.execPath, [CLI, 'doctor', ...args], { encoding: 'utf8', env, timeout: 120_000 });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('intercode doctor (CLI)', () => {
  it.skipIf(!engine.ok && !IN_CI)('on this engine: every check, in order, and the exit code says healthy or not', () => {
    const { KUBECONFIG: _cluster, ...noCluster } = process.env;
    const { status, stdout, stderr } = doctor(['--json'], noCluster);
    const report = JSON.parse(stdout) as DoctorReport;
    expect(report.checks.map((c) => c.id)).toEqual(['engine', 'cgroup', 'runtimes', 'episode-roots', 'disk-quota', 'images', 'free-disk']);
    expect(report.checks[0]).toMatchObject({ status: 'ok' });
    expect(report.checks.find((c) => c.id === 'runtimes')!.summary).toContain('runc');
    for (const check of report.checks) if (check.status !== 'ok') expect(check.fix, check.id).toBeTruthy();
    expect(report.healthy).toBe(report.checks.every((c) => c.status !== 'fail'));
    expect(status, stderr).toBe(report.healthy ? 0 : 1);
    const text = doctor([], noCluster);
    expect(text.stdout).toMatch(/^(ok {2}|warn|FAIL) {2}engine +Docker /m);
    expect(text.stdout.trim().split('\n').at(-1)).toBe(report.healthy ? 'healthy' : 'not healthy: fix the FAIL lines');
  });

  it('without an engine: unhealthy, exit 1, and the fix is setup', () => {
    const { status, stdout } = doctor(['--json'], { ...process.env, DOCKER_HOST: 'unix:///tmp/ic-doctor-no-such.sock' });
    expect(status).toBe(1);
    const report = JSON.parse(stdout) as DoctorReport;
    expect(report).toMatchObject({ healthy: false, endpoint: 'unix:///tmp/ic-doctor-no-such.sock' });
    expect(report.checks[0]).toMatchObject({ id: 'engine', status: 'fail', fix: expect.stringMatching(/^npx intercode setup/) });
    expect(report.checks.find((c) => c.id === 'images')).toMatchObject({ status: 'fail', summary: 'not checked: no engine answers' });
  });
});

describe('intercode doctor: the Kubernetes cluster check', () => {
  // An apiserver that refuses at once: port 1 on loopback, where nothing listens.
  const dir = mkdtempSync(join(tmpdir(), 'ic-doctor-kube-'));
  const kubeconfig = join(dir, 'config');
  writeFileSync(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{name: nowhere, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]',
      'users: [{name: nobody, user: {token: x}}]',
      'contexts: [{name: nowhere, context: {cluster: nowhere, user: nobody, namespace: sandboxes}}]',
      'current-context: nowhere',
    ].join('\n'),
  );
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const env = { ...process.env, KUBECONFIG: kubeconfig, DOCKER_HOST: 'unix:///tmp/ic-doctor-no-such.sock' };
  const clusterOf = (stdout: string) => (JSON.parse(stdout) as DoctorReport).checks.find((c) => c.id === 'cluster');

  it('a cluster named with --engine that does not answer fails, naming the server and namespace', () => {
    const { stdout } = doctor(['--json', '--engine', 'k8s'], env);
    expect(clusterOf(stdout)).toMatchObject({ status: 'fail', summary: expect.stringMatching(/namespace sandboxes on https:\/\/127\.0\.0\.1:1.*does not answer/), fix: expect.stringContaining('KUBECONFIG') });
  });

  it('a cluster found only through KUBECONFIG warns', () => {
    expect(clusterOf(doctor(['--json'], env).stdout)).toMatchObject({ status: 'warn' });
  });

  it('--engine with a Docker endpoint or an unknown context is a usage error naming the flag', () => {
    const endpoint = doctor(['--engine', 'tcp://127.0.0.1:2375'], env);
    expect(endpoint.status).toBe(2);
    expect(endpoint.stderr).toContain('--engine names the cluster doctor checks');
    const context = doctor(['--json', '--engine', 'k8s:elsewhere'], env);
    expect(clusterOf(context.stdout)).toMatchObject({ status: 'fail', summary: expect.stringContaining('context "elsewhere", which does not exist') });
  });

  it('reports a reachable cluster that allows pods as ok', () => {
    expect(clusterCheck({ server: 'https://k:6443', namespace: 'ns', version: 'v1.20.2', reachable: true, canCreatePods: true }, true)).toEqual({
      id: 'cluster',
      status: 'ok',
      summary: 'Kubernetes v1.20.2: pods may be created in namespace ns on https://k:6443',
    });
    expect(clusterCheck({ server: 'https://k:6443', namespace: 'ns', version: 'v1.20.2', reachable: true, canCreatePods: false, problem: 'forbidden' }, true)).toMatchObject({ status: 'fail', fix: expect.stringContaining('pods/exec') });
  });

  it('a cluster whose every node cannot take a pod fails (a warning when not asked for); one such node among others is named', () => {
    const base = { server: 'https://k:6443', namespace: 'ns', version: 'v1.20.2', reachable: true, canCreatePods: true };
    const down = { ...base, nodesAvailable: 0, nodesUnavailable: ['n1: not Ready (Unknown, NodeStatusUnknown: Kubelet stopped posting node status.)'] };
    expect(clusterCheck(down, true)).toMatchObject({ status: 'fail', summary: 'Kubernetes v1.20.2 (namespace ns on https://k:6443): no node can run a pod (n1: not Ready (Unknown, NodeStatusUnknown: Kubelet stopped posting node status.))', fix: expect.stringContaining('kubelet') });
    expect(clusterCheck(down, false)).toMatchObject({ status: 'warn' });
    expect(clusterCheck({ ...base, nodesAvailable: 1, nodesUnavailable: ['n2: cordoned'] }, true)).toEqual({ id: 'cluster', status: 'ok', summary: 'Kubernetes v1.20.2: pods may be created in namespace ns on https://k:6443; cannot run pods: n2: cordoned' });
    expect(clusterCheck({ ...base, nodesAvailable: 0, nodesUnavailable: [] }, true)).toMatchObject({ status: 'fail', summary: expect.stringContaining('no node can run a pod (no node is listed)') });
    // Nodes not listed (a namespace-scoped identity): nothing is said of them.
    expect(clusterCheck({ ...base, nodesProblem: 'cannot list nodes: 403' }, true)).toMatchObject({ status: 'ok' });
  });

  it('says why a node cannot take a pod: not Ready, cordoned, tainted', () => {
    const ready = { type: 'Ready', status: 'True' };
    expect(nodeUnavailable({ status: { conditions: [ready] } })).toBeUndefined();
    expect(nodeUnavailable({ status: { conditions: [{ type: 'Ready', status: 'False', reason: 'KubeletNotReady', message: 'PLEG is not healthy' }] } })).toBe('not Ready (False, KubeletNotReady: PLEG is not healthy)');
    expect(nodeUnavailable({ status: {} })).toBe('not Ready (no Ready condition)');
    expect(nodeUnavailable({ spec: { unschedulable: true }, status: { conditions: [ready] } })).toBe('cordoned');
    expect(nodeUnavailable({ spec: { taints: [{ key: 'node.kubernetes.io/disk-pressure', effect: 'NoSchedule' }, { key: 'soft', effect: 'PreferNoSchedule' }] }, status: { conditions: [ready] } })).toBe('tainted node.kubernetes.io/disk-pressure:NoSchedule');
  });

  it("pids: ok only when every node's kubelet sets podPidsLimit; nodes without one or unread warn", () => {
    const base = { server: 'https://k:6443', namespace: 'ns', version: 'v1.20.2', reachable: true, canCreatePods: true };
    expect(clusterPidsCheck({ ...base, podPidsLimits: { a: 1024, b: 4096 } })).toEqual({ id: 'cluster-pids', status: 'ok', summary: "every pod's processes are limited (podPidsLimit per node: a 1024, b 4096)" });
    const none = clusterPidsCheck({ ...base, podPidsLimits: { a: 1024, b: -1 } });
    expect(none).toMatchObject({ status: 'warn', summary: expect.stringMatching(/^no pod pids limit on b: .*a 1024, b none/), fix: expect.stringContaining('podPidsLimit') });
    expect(clusterPidsCheck({ ...base, podPidsLimits: { a: 1024, b: null }, nodesProblem: 'cannot read the kubelet configuration of b: 403' })).toMatchObject({ status: 'warn', summary: expect.stringContaining('b ?') });
    expect(clusterPidsCheck({ ...base, nodesProblem: 'cannot list nodes: 403' })).toMatchObject({ status: 'warn', summary: 'pod pids limits unknown: cannot list nodes: 403' });
  });
});

describe('doctor checks', () => {
  const mounts = ['/dev/sda1 / ext4 rw,relatime 0 0', '/dev/sdb1 /var/lib/docker xfs rw,relatime,attr2,inode64,prjquota 0 0', '/dev/sdc1 /srv\\040data xfs rw,relatime 0 0'].join('\n');

  it('finds the mount a path lives on (deepest, octal escapes decoded)', () => {
    expect(mountOf('/var/lib/docker/overlay2', mounts)).toMatchObject({ point: '/var/lib/docker', type: 'xfs' });
    expect(mountOf('/srv data/docker', mounts)).toMatchObject({ point: '/srv data' });
    expect(mountOf('/home', mounts)).toMatchObject({ point: '/', type: 'ext4' });
  });

  it('disk quota: says how sandboxes will hold their limit (the engine on btrfs or zfs, watched on overlay2), with a fix', () => {
    const xfs = (root: string) => ({ Driver: 'overlay2', DriverStatus: [['Backing Filesystem', 'xfs']] as [string, string][], DockerRootDir: root });
    const pquota = diskQuotaCheck(xfs('/var/lib/docker'), mounts);
    expect(pquota).toMatchObject({ status: 'warn', fix: expect.stringContaining('btrfs storage driver') });
    expect(pquota.summary).toContain('overlay2 on xfs with project quotas (Docker could hold a size there, but sandboxes ask for one only on btrfs or zfs)');
    const noQuota = diskQuotaCheck(xfs('/srv data/docker'), mounts);
    expect(noQuota).toMatchObject({ status: 'warn', fix: expect.stringContaining('btrfs storage driver') });
    expect(noQuota.summary).toContain("overlay2 on xfs without pquota: each sandbox's disk limit is watched");
    expect(diskQuotaCheck({ Driver: 'btrfs' })).toMatchObject({ status: 'ok', summary: "storage driver btrfs: the engine holds each sandbox's disk limit" });
    expect(diskQuotaCheck({ Driver: 'zfs' }).status).toBe('ok');
    expect(diskQuotaCheck({ Driver: 'overlay2', DriverStatus: [['Backing Filesystem', 'extfs']] })).toMatchObject({ status: 'warn', summary: expect.stringContaining("overlay2 on extfs: each sandbox's disk limit is watched, not held by the engine") });
    expect(diskQuotaCheck({ Driver: 'vfs' })).toMatchObject({ status: 'warn', summary: expect.stringContaining('only a file-size limit bounds') });
  });

  it('runtimes: runc needed, runsc recommended', () => {
    expect(runtimesCheck({ Runtimes: { runc: {}, runsc: { path: '/usr/bin/runsc' } } }).status).toBe(process.platform === 'linux' && spawnSync('test', ['-e', '/usr/bin/runsc']).status === 0 ? 'ok' : 'warn');
    expect(runtimesCheck({ Runtimes: { runc: {} } })).toMatchObject({ status: 'warn', fix: expect.stringContaining('apt-get install -y runsc') });
    expect(runtimesCheck({ Runtimes: { runsc: { path: '/usr/bin/runsc' } } }).status).toBe('fail');
    expect(runtimesCheck({ Runtimes: { runc: {}, runsc: { path: '/nonexistent/runsc' } } }).status).toBe('warn');
  });

  it('free disk: measured with statfs, judged against the thresholds', () => {
    expect(freeDiskCheck('/', 0, 0)).toMatchObject({ status: 'ok', summary: expect.stringMatching(/^\d+\.\d GiB free on \/$/) });
    expect(freeDiskCheck('/', 1e9, 0).status).toBe('warn');
    expect(freeDiskCheck('/', 1e9, 1e9)).toMatchObject({ status: 'fail', fix: expect.stringContaining('cleanup --dead-only') });
  });
});

describe('runDoctor', () => {
  it('appends extra checks (another backend\'s) after its own, and a failing one makes the report unhealthy', async () => {
    const { runDoctor } = await import('../../src/doctor/index.js');
    const report = await runDoctor({ images: [], perTask: [] }, { env: { ...process.env, DOCKER_HOST: 'unix:///tmp/ic-doctor-none.sock' } }, [
      async () => [
        { id: 'cluster', status: 'ok', summary: 'a test check' },
        { id: 'cluster-pids', status: 'warn', summary: 'a second one' },
      ],
    ]);
    expect(report.checks.map((c) => c.id)).toEqual(['engine', 'cgroup', 'runtimes', 'episode-roots', 'disk-quota', 'images', 'free-disk', 'cluster', 'cluster-pids']);
    expect(report.healthy).toBe(false);
  });
});
