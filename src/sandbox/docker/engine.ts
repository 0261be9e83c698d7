import Docker from 'dockerode';
import { EngineUnreachableError } from '../../errors.js';

/** Where to reach a Docker engine: a unix socket path or an http(s)/tcp URL. */
export type EngineEndpoint = string;

/** The endpoint named by DOCKER_HOST, else the default local socket. */
export function defaultEndpoint(): EngineEndpoint {
  return process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock';
}

/** dockerode's options for `endpoint` (a unix socket path, unix://, tcp:// or http(s)://). */
export function clientOptions(endpoint: EngineEndpoint): Docker.DockerOptions {
  if (endpoint.startsWith('unix://')) return { socketPath: endpoint.slice('unix://'.length) };
  if (endpoint.startsWith('/')) return { socketPath: endpoint };
  const url = new URL(endpoint.replace(/^tcp:/, 'http:'));
  return {
    protocol: url.protocol === 'https:' ? 'https' : 'http',
    host: url.hostname,
    port: Number(url.port || (url.protocol === 'https:' ? 2376 : 2375)),
  };
}

/**
 * Connects to a Docker engine and checks that it answers.
 * @throws EngineUnreachableError when nothing answers within `timeoutMs`.
 */
export async function connectEngine(
  endpoint: EngineEndpoint = defaultEndpoint(),
  timeoutMs = 5_000,
): Promise<Docker> {
  const docker = new Docker({ ...clientOptions(endpoint), timeout: timeoutMs });
  try {
    await docker.ping();
  } catch (error) {
    throw new EngineUnreachableError(endpoint, error);
  }
  // The ping used a timeout; long-running calls (builds, attach streams) must not.
  return new Docker(clientOptions(endpoint));
}

/** The HTTP status of an engine API error (404: no such container or image); undefined for other errors. */
export function statusCode(error: unknown): number | undefined {
  return typeof error === 'object' && error !== null && 'statusCode' in error ? (error as { statusCode?: number }).statusCode : undefined;
}
