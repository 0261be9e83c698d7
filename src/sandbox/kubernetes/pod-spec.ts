import type { V1Pod } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { OWNER_LABEL, OWNER_VALUE, RUN_LABEL, TEST_LABEL } from '../docker/labels.js';
import { IDLE_PROCESS_NAME, type SandboxSpec } from '../types.js';
import { HARNESS_CAPABILITY } from '../harness-capability.js';

/** The one container of a sandbox pod. */
export const SANDBOX_CONTAINER = 'sandbox';

/** A label value may hold only [A-Za-z0-9._-], at most 63 characters, alphanumeric at both ends. */
function labelValue(text: string): string {
  return text.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 63).replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
}

/** Host names longer than this are cut and given a digest of the whole name (see {@link hostKey}). */
const HOST_KEY_LENGTH = 50;

/**
 * The host part of a pod run label: the host name made label-safe, or, when longer than
 * {@link HOST_KEY_LENGTH}, its start and a digest of the whole name, so that `pid.host`
 * fits a label (pids have at most 7 digits: 8 + 50 ≤ 63) whatever the pid's length.
 */
function hostKey(host: string): string {
  const safe = labelValue(host);
  if (safe.length <= HOST_KEY_LENGTH && safe === host) return safe;
  const digest = createHash('sha256').update(host).digest('hex').slice(0, 8);
  return `${labelValue(safe.slice(0, HOST_KEY_LENGTH - 9))}-${digest}`;
}

/** This process's run label on pods: `pid.host` (`@` is not allowed in label values; see {@link hostKey}). */
export function podRunLabelValue(pid: number = process.pid, host: string = hostname()): string {
  return `${pid}.${hostKey(host)}`;
}

/** The pid of a pod run label whose host is this one; undefined for another host's. */
export function pidOnThisHost(runLabel: string | undefined, host: string = hostname()): number | undefined {
  if (!runLabel) return undefined;
  const dot = runLabel.indexOf('.');
  if (dot < 0 || runLabel.slice(dot + 1) !== hostKey(host)) return undefined;
  const pid = Number(runLabel.slice(0, dot));
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** Our ownership labels on a pod (the test label too under a test run). */
export function podOwnerLabels(): Record<string, string> {
  const testRun = process.env.INTERCODE_TEST_RUN;
  return { [OWNER_LABEL]: OWNER_VALUE, [RUN_LABEL]: podRunLabelValue(), ...(testRun ? { [TEST_LABEL]: labelValue(testRun) } : {}) };
}

/** The label selector for this run's pods. */
export function thisRunSelector(): string {
  return `${OWNER_LABEL}=${OWNER_VALUE},${RUN_LABEL}=${podRunLabelValue()}`;
}

export interface PodOptions {
  /** RuntimeClass to run the pod with (gVisor's `gvisor`, Kata's `kata`); default: the node's. */
  runtimeClassName?: string;
  /** The pod is ended by the cluster after this long, whatever becomes of us (safety net). Default 6 h. */
  activeDeadlineSeconds?: number;
}

/**
 * PID 1 of a sandbox: a bash that reaps orphans (bash waits for any child, its own or
 * re-parented) and keeps the idle process running, or runs the spec's main process and
 * ends with it. Kubernetes has no `--init`; this is ours.
 */
function init(spec: SandboxSpec): string[] {
  if (spec.command) return ['bash', '-c', `${EMPTY_NETWORK_FILES} "$@" & main=$!; while :; do wait "$main"; s=$?; kill -0 "$main" 2>/dev/null || exit "$s"; done`, 'init', ...spec.command];
  return ['bash', '-c', `${EMPTY_NETWORK_FILES} while :; do (exec -a ${IDLE_PROCESS_NAME} sleep infinity) & wait; done`];
}

/**
 * A Docker sandbox has no network, and empty /etc/hosts and /etc/resolv.conf. The kubelet
 * mounts its own (the pod's address, the node's name servers): emptied before anything
 * else runs, so a pod shows what a Docker sandbox shows and nothing of the cluster.
 */
const EMPTY_NETWORK_FILES = ': > /etc/hosts; : > /etc/resolv.conf;';

const quantity = (bytes: number) => `${Math.max(1, Math.round(bytes / 1024 / 1024))}Mi`;

/**
 * A sandbox as a bare pod: no restarts, no service-account token, no service links,
 * every capability dropped but the spec's, no privilege escalation, the runtime's default
 * seccomp profile, small requests and the spec's limits as limits, a deadline, our labels.
 * Image pulls: `Never` (the node must have the image; see docs/kubernetes.md).
 */
export function sandboxPod(spec: SandboxSpec, options: PodOptions = {}): V1Pod {
  const mounts = spec.mounts ?? [];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { generateName: 'intercode-', labels: { ...podOwnerLabels(), ...Object.fromEntries(Object.entries(spec.labels ?? {}).map(([k, v]) => [k, labelValue(v)])) } },
    spec: {
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      hostname: spec.hostname,
      terminationGracePeriodSeconds: 0,
      activeDeadlineSeconds: options.activeDeadlineSeconds ?? 6 * 3600,
      ...(options.runtimeClassName ? { runtimeClassName: options.runtimeClassName } : {}),
      securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
      volumes: mounts.map((m, i) => ({ name: `mount-${i}`, hostPath: { path: m.hostPath } })),
      containers: [
        {
          name: SANDBOX_CONTAINER,
          image: spec.image,
          imagePullPolicy: 'Never',
          command: init(spec),
          workingDir: '/',
          securityContext: {
            allowPrivilegeEscalation: false,
            privileged: false,
            // The harness's processes hold one capability the agent's drop (see harness-capability.ts).
            capabilities: { drop: ['ALL'], add: [...new Set([...spec.capabilities, HARNESS_CAPABILITY])] },
          },
          resources: {
            requests: { cpu: '10m', memory: '32Mi' },
            limits: { cpu: `${Math.round(spec.limits.cpus * 1000)}m`, memory: quantity(spec.limits.memoryBytes) },
          },
          volumeMounts: mounts.map((m, i) => ({ name: `mount-${i}`, mountPath: m.containerPath, readOnly: !!m.readOnly })),
        },
      ],
    },
  };
}
