import type WebSocket from 'isomorphic-ws';
import type { AttachedProcess } from '../types.js';
import { kubernetesLibrary, type Cluster } from './cluster.js';

/** What the status channel said when the process ended. */
export interface ExecStatus {
  /** The exit code; null when the status was not an exit (the container is gone, say). */
  exitCode: number | null;
  /** The status message when it was not an exit code. */
  message?: string;
}

/** v4.channel.k8s.io status (channel 3): `Success`, or `Failure` with reason `NonZeroExitCode` and the code as a cause. */
export function parseExecStatus(text: string): ExecStatus {
  try {
    const status = JSON.parse(text) as { status?: string; reason?: string; message?: string; details?: { causes?: { reason?: string; message?: string }[] } };
    if (status.status === 'Success') return { exitCode: 0 };
    const code = status.details?.causes?.find((c) => c.reason === 'ExitCode')?.message;
    if (status.reason === 'NonZeroExitCode' && code !== undefined && /^\d+$/.test(code)) return { exitCode: Number(code) };
    return { exitCode: null, message: status.message ?? text };
  } catch {
    return { exitCode: null, message: text };
  }
}

/** How long opening an exec keeps retrying a restarting apiserver (a dead pod's exec fails with 4xx at once). */
const EXEC_RETRY_MS = 15_000;

/** Handlers of one exec stream. */
export interface ExecHandlers {
  /** stdout and stderr, in the order they arrive. */
  output(chunk: Buffer): void;
  /** Once, when the stream closes; with the status if one came. */
  closed(status: ExecStatus | undefined): void;
}

/**
 * Runs `argv` in a pod's container over one exec WebSocket (v4.channel.k8s.io, or v5 where
 * the apiserver offers it). Exec knows no working directory or environment: `env` and
 * `cd` in front of the command give them.
 * @throws what the connection throws (the caller decides whether the pod is lost).
 */
export async function openExec(
  cluster: Cluster,
  pod: string,
  container: string,
  argv: readonly string[],
  options: { stdin: boolean; workdir?: string; env?: Readonly<Record<string, string>> },
  handlers: ExecHandlers,
): Promise<WebSocket.WebSocket> {
  const command = wrapCommand(argv, options);
  const query = new URLSearchParams({ container, stdout: 'true', stderr: 'true', stdin: String(options.stdin), tty: 'false' });
  for (const arg of command) query.append('command', arg);
  const path = `/api/v1/namespaces/${cluster.namespace}/pods/${pod}/exec?${query.toString()}`;
  let status: ExecStatus | undefined;
  const { Exec } = await kubernetesLibrary();
  const ws = await cluster.request(`exec in ${pod}`, () =>
    new Exec(cluster.config).handler.connect(path, null, (channel: number, data: Buffer) => {
      if (channel === 1 || channel === 2) handlers.output(Buffer.from(data));
      else if (channel === 3) status = parseExecStatus(data.toString());
      return true;
    }),
    EXEC_RETRY_MS,
  );
  let done = false;
  const close = () => {
    if (done) return;
    done = true;
    handlers.closed(status);
  };
  ws.on('close', close);
  ws.on('error', close);
  return ws;
}

/**
 * The kubelet gives every container the apiserver's address (KUBERNETES_SERVICE_HOST and
 * six more, even with enableServiceLinks off): unset, so a process sees the environment a
 * Docker sandbox has and learns nothing of the cluster.
 */
const CLUSTER_VARIABLES = ['KUBERNETES_PORT', 'KUBERNETES_PORT_443_TCP', 'KUBERNETES_PORT_443_TCP_ADDR', 'KUBERNETES_PORT_443_TCP_PORT', 'KUBERNETES_PORT_443_TCP_PROTO', 'KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT', 'KUBERNETES_SERVICE_PORT_HTTPS'];

function wrapCommand(argv: readonly string[], options: { workdir?: string; env?: Readonly<Record<string, string>> }): string[] {
  const env = Object.entries(options.env ?? {}).map(([k, v]) => `${k}=${v}`);
  const inDir = options.workdir ? ['bash', '-c', 'cd -- "$0" || exit 126; exec "$@"', options.workdir, ...argv] : [...argv];
  return ['env', ...CLUSTER_VARIABLES.flatMap((name) => ['-u', name]), ...env, ...inDir];
}

/** stdin frame: channel 0, then the bytes. */
function stdinFrame(data: Buffer | string): Buffer {
  const payload = typeof data === 'string' ? Buffer.from(data) : data;
  return Buffer.concat([Buffer.from([0]), payload]);
}

/** Sends `data` to the process's stdin (nothing once the stream is closed). */
export function sendStdin(ws: WebSocket.WebSocket, data: Buffer | string): void {
  if (ws.readyState === ws.OPEN) ws.send(stdinFrame(data));
}

/** A long-lived process (a persistent shell) on one exec WebSocket. */
export class ExecAttachedProcess implements AttachedProcess {
  private handlers: { output(chunk: Buffer): void; exit(): void } | undefined;
  private readonly early: Buffer[] = [];
  private exited = false;
  private ws: WebSocket.WebSocket | undefined;

  /** Opens the stream. @throws what {@link openExec} throws. */
  static async start(cluster: Cluster, pod: string, container: string, argv: readonly string[], options: { workdir?: string; env?: Readonly<Record<string, string>> }): Promise<ExecAttachedProcess> {
    const process = new ExecAttachedProcess();
    process.ws = await openExec(cluster, pod, container, argv, { ...options, stdin: true }, {
      output: (chunk) => (process.handlers ? process.handlers.output(chunk) : process.early.push(chunk)),
      closed: () => {
        process.exited = true;
        process.handlers?.exit();
      },
    });
    return process;
  }

  write(data: string): void {
    if (this.ws) sendStdin(this.ws, data);
  }

  listen(handlers: { output(chunk: Buffer): void; exit(): void }): void {
    this.handlers = handlers;
    for (const chunk of this.early.splice(0)) handlers.output(chunk);
    if (this.exited) handlers.exit();
  }

  /** v4 cannot half-close stdin: closing the stream ends the exec (the kubelet closes the process's stdin). */
  close(): void {
    this.ws?.close();
  }
}
