import { existsSync, readFileSync } from 'node:fs';
import Docker from 'dockerode';
import { clientOptions } from '../sandbox/docker/engine.js';

/** How the engine at an endpoint answered a ping. */
export type EngineAnswer =
  | { answers: true; serverVersion: string }
  | { answers: false; reason: 'no-socket' | 'permission-denied' | 'refused' | 'timeout' | 'other'; message: string };

/** What the set-up decision depends on, gathered once from the real host (see {@link probeHost}). */
export interface HostFacts {
  root: boolean;
  /** /etc/os-release's ID and ID_LIKE, lower case (e.g. ["debian"], ["ubuntu", "debian"]). */
  osIds: string[];
  /** PRETTY_NAME, for messages. */
  osName: string;
  /** DOCKER_HOST when set (not empty). */
  dockerHost?: string;
  /** The endpoint probed: DOCKER_HOST, else the default local socket. */
  endpoint: string;
  engine: EngineAnswer;
  /** Commands found on PATH (and sbin folders), by name. */
  commands: Record<string, boolean>;
  /** A live process whose pidfile is the engine's (dockerd running but maybe not answering). */
  dockerdPid?: number;
}

/** Where {@link probeHost} looks; tests point these at files of their own. */
export interface ProbeOptions {
  osReleasePath?: string;
  env?: NodeJS.ProcessEnv;
  pidfile?: string;
  /** The socket probed when DOCKER_HOST is unset. */
  defaultSocket?: string;
  uid?: number;
  pingTimeoutMs?: number;
}

/** The commands the set-up plan looks for (in {@link HostFacts.commands}). */
export const PROBED_COMMANDS = ['dockerd', 'apt-get'] as const;

/** /etc/os-release as key → value. Missing file: empty. */
export function readOsRelease(path = '/etc/os-release'): Record<string, string> {
  if (!existsSync(path)) return {};
  const values: Record<string, string> = {};
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const match = /^([A-Z_]+)=(.*)$/.exec(line.trim());
    if (match) values[match[1]!] = match[2]!.replace(/^(["'])(.*)\1$/, '$2');
  }
  return values;
}

/** Whether `name` is a command on PATH or in an sbin folder (root's tools live there). */
export function commandExists(name: string, env: NodeJS.ProcessEnv = process.env): boolean {
  const path = `${env.PATH ?? ''}:/usr/local/sbin:/usr/sbin:/sbin`;
  return path.split(':').some((dir) => dir !== '' && existsSync(`${dir}/${name}`));
}

/** Pings the engine at `endpoint` and says why it did not answer. Never throws. */
export async function pingEngine(endpoint: string, timeoutMs = 3_000): Promise<EngineAnswer> {
  const socket = endpoint.startsWith('unix://') ? endpoint.slice('unix://'.length) : endpoint.startsWith('/') ? endpoint : undefined;
  if (socket !== undefined && !existsSync(socket)) return { answers: false, reason: 'no-socket', message: `${socket} does not exist` };
  try {
    const version = (await new Docker({ ...clientOptions(endpoint), timeout: timeoutMs }).version()) as { Version?: string };
    return { answers: true, serverVersion: version.Version ?? 'unknown' };
  } catch (error) {
    const err = error as NodeJS.ErrnoException;
    const reason = err.code === 'EACCES' ? 'permission-denied' : err.code === 'ECONNREFUSED' || err.code === 'ENOENT' ? 'refused' : /timeout/i.test(err.message) ? 'timeout' : 'other';
    return { answers: false, reason, message: err.message.split('\n')[0]! };
  }
}

/** The pid in `pidfile` when that process is alive. */
function livePid(pidfile: string): number | undefined {
  const pid = Number(existsSync(pidfile) ? readFileSync(pidfile, 'utf8').trim() : NaN);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  return existsSync(`/proc/${pid}`) ? pid : undefined;
}

/** Gathers the {@link HostFacts} of this machine: /etc/os-release, uid, commands, a ping of the engine. Never throws. */
export async function probeHost(options: ProbeOptions = {}): Promise<HostFacts> {
  const env = options.env ?? process.env;
  const release = readOsRelease(options.osReleasePath);
  const dockerHost = env.DOCKER_HOST?.trim() || undefined;
  const endpoint = dockerHost ?? `unix://${options.defaultSocket ?? '/var/run/docker.sock'}`;
  const commands = Object.fromEntries(PROBED_COMMANDS.map((name) => [name, commandExists(name, env)]));
  const uid = options.uid ?? process.getuid?.() ?? -1;
  const facts: HostFacts = {
    root: uid === 0,
    osIds: [release.ID, ...(release.ID_LIKE ?? '').split(/\s+/)].filter((id): id is string => !!id).map((id) => id.toLowerCase()),
    osName: release.PRETTY_NAME ?? release.ID ?? 'an unknown system',
    endpoint,
    engine: await pingEngine(endpoint, options.pingTimeoutMs),
    commands,
  };
  if (dockerHost) facts.dockerHost = dockerHost;
  const pid = livePid(options.pidfile ?? '/var/run/docker.pid');
  if (pid !== undefined) facts.dockerdPid = pid;
  return facts;
}
