import type Docker from 'dockerode';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { rename } from 'node:fs/promises';
import { join } from 'node:path';
import { channelRoot, removeChannelDir } from '../fifo-channel.js';
import { OWNER_LABEL, OWNER_VALUE, RUN_LABEL, TEST_LABEL } from '../labels.js';
import type { WarmRole } from '../../types.js';

/**
 * Sandboxes kept warm between commands: when a command ends, its pool's clean sandboxes are
 * parked — left running, idle, under a name that says so and until when — and the next
 * command of the same configuration adopts them instead of creating new ones. Like ssh's
 * ControlPersist: what is kept goes away by itself after a while (see warm-keeper.ts).
 *
 * Who holds a parked sandbox is settled on this host's file system: its channel directory
 * is renamed by whoever takes it, and of several processes renaming the same directory
 * exactly one succeeds (a container rename is no such lock: the engine renames by id
 * whatever the current name). The container's name then says what happened, for listing
 * and crash reaping (the only thing about a container the engine lets us change):
 *
 * - `intercode-warm.<key>.<role>.<expiresAtMs>.<tag>`: parked. Nobody's; adopt it by
 *   renaming it to your own name. `key` is the configuration (image id, limits, runtime…),
 *   `role` what it serves as (a pool's `workspace`, or a restorer's `template`).
 * - `intercode-run.<pid>.<host>.<tag>`: adopted, owned by process `pid` of `host`. Its run
 *   label still names the process that created it; the name wins (see {@link containerRun}).
 *
 * `tag` names the sandbox's channel directory on the host (FIFO transport; only such
 * sandboxes are parked), which follows its container: `<pid>-<tag>` while a process owns
 * it, `warm-<tag>` while parked, `intercode-expired-<tag>` while being removed (the
 * orphan-channel sweep removes only directories of processes that are gone).
 */


const WARM = 'intercode-warm';
const RUN = 'intercode-run';
const EXPIRED = 'intercode-expired';

/** What a container's name says about it. */
export type ContainerName =
  | { state: 'warm'; key: string; role: WarmRole; expiresAt: number; tag: string }
  | { state: 'run'; pid: number; host: string; tag: string }
  | { state: 'other' };

/** Parses a container name as the engine lists it (with or without its leading slash). */
export function parseContainerName(name: string): ContainerName {
  const parts = name.replace(/^\//, '').split('.');
  const [prefix] = parts;
  if (prefix === WARM && parts.length === 5) {
    const [, key, role, expires, tag] = parts as [string, string, string, string, string];
    const expiresAt = Number(expires);
    if ((role === 'workspace' || role === 'template') && Number.isSafeInteger(expiresAt)) return { state: 'warm', key, role, expiresAt, tag };
  }
  if (prefix === RUN && parts.length >= 4) {
    const pid = Number(parts[1]);
    if (Number.isSafeInteger(pid) && pid > 0) return { state: 'run', pid, host: parts.slice(2, -1).join('.'), tag: parts.at(-1)! };
  }
  return { state: 'other' };
}

/** A name for a new sandbox's channel and container: 16 hex digits. */
export function newTag(): string {
  return randomBytes(8).toString('hex');
}

/** Host names may hold dots; container names may not hold every character a host name may. */
function nameSafeHost(): string {
  return hostname().replace(/[^a-zA-Z0-9_.-]/g, '-');
}

export function warmName(key: string, role: WarmRole, expiresAt: number, tag: string): string {
  return `${WARM}.${key}.${role}.${Math.round(expiresAt)}.${tag}`;
}

export function runName(tag: string, pid: number = process.pid): string {
  return `${RUN}.${pid}.${nameSafeHost()}.${tag}`;
}

/**
 * The process (pid and host) a container belongs to: the one its name says when it was
 * adopted, else the one its run label names. Undefined for a parked one.
 */
export function containerRun(container: { Names?: string[]; Labels: Record<string, string> }): { pid: number; host: string } | undefined {
  const name = parseContainerName(container.Names?.[0] ?? '');
  if (name.state === 'run') return { pid: name.pid, host: name.host };
  if (name.state !== 'other') return undefined;
  const [pid, host] = (container.Labels[RUN_LABEL] ?? '').split('@');
  return { pid: Number(pid), host: host ?? '' };
}

/** Whether `host` (as a container name carries it) is this host. */
export function isThisHost(host: string): boolean {
  return host === hostname() || host === nameSafeHost();
}

/** The host directory of the channel tagged `tag`, as owned by `owner` (a pid) or parked. */
export function channelDir(tag: string, owner: number | 'warm'): string {
  return join(channelRoot(), `${owner}-${tag}`);
}

/** The tag of a parked (`warm-<tag>`) or expiring (`intercode-expired-<tag>`) channel directory's name; undefined for other names. */
export function warmChannelTag(name: string): string | undefined {
  return /^(?:warm|intercode-expired)-([0-9a-f]{16})$/.exec(name)?.[1];
}

/** A parked sandbox is adopted only with at least this long to live: its keeper never removes one being adopted. */
const ADOPT_MARGIN_MS = 5_000;

/**
 * Moves a parked sandbox's channel directory: the claim on it. A rename is atomic, so of
 * several processes moving the same directory exactly one succeeds.
 * @returns false when another process claimed it first (the directory is gone).
 */
async function claimChannel(tag: string, to: string): Promise<boolean> {
  try {
    await rename(channelDir(tag, 'warm'), to);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

interface ListedContainer {
  Id: string;
  Names?: string[];
  State?: string;
  Labels: Record<string, string>;
}

/** The parked containers (of one test run, when `testRun` is given). */
async function listWarm(docker: Docker, testRun?: string): Promise<{ container: ListedContainer; name: Extract<ContainerName, { state: 'warm' }> }[]> {
  const label = [`${OWNER_LABEL}=${OWNER_VALUE}`, ...(testRun ? [`${TEST_LABEL}=${testRun}`] : [])];
  const containers = (await docker.listContainers({ all: true, filters: { label, name: [`^/${WARM}\\.`] } })) as ListedContainer[];
  return containers.flatMap((container) => {
    const name = parseContainerName(container.Names?.[0] ?? '');
    return name.state === 'warm' ? [{ container, name }] : [];
  });
}

/** A parked container as listed: what {@link claimParked} takes. */
export interface ParkedSandbox {
  id: string;
  running: boolean;
  name: Extract<ContainerName, { state: 'warm' }>;
}

/**
 * The parked containers of configuration `key` and role `role`, the longest-lived first
 * (the others may expire before they are wanted); expired ones met on the way are removed.
 * One engine call: a process that fills a pool lists once and claims from the list.
 */
export async function listParked(docker: Docker, key: string, role: WarmRole): Promise<ParkedSandbox[]> {
  const now = Date.now();
  const parked: ParkedSandbox[] = [];
  for (const { container, name } of await listWarm(docker)) {
    if (name.key !== key || name.role !== role) continue;
    if (name.expiresAt <= now) await removeWarm(docker, container.Id, name.tag);
    else parked.push({ id: container.Id, running: container.State === 'running', name });
  }
  return parked.sort((a, b) => b.name.expiresAt - a.name.expiresAt);
}

/**
 * Takes a parked container for this process: its channel directory becomes this process's
 * (`<pid>-<tag>`, the atomic claim), then the container is renamed {@link runName} (so crash
 * reaping knows its owner).
 * @returns its id and tag, or undefined when it is not to be had: claimed by another
 *   process, stopped, removed meanwhile, or too close to its expiry (its keeper may be removing it).
 */
export async function claimParked(docker: Docker, parked: ParkedSandbox): Promise<{ id: string; tag: string } | undefined> {
  const { id, running, name } = parked;
  if (!running || name.expiresAt <= Date.now() + ADOPT_MARGIN_MS) return undefined;
  if (!(await claimChannel(name.tag, channelDir(name.tag, process.pid)))) return undefined;
  try {
    await docker.getContainer(id).rename({ name: runName(name.tag) });
    return { id, tag: name.tag };
  } catch {
    // Gone meanwhile (removed from outside): let go of its channel too.
    await removeChannelDir(channelDir(name.tag, process.pid));
    return undefined;
  }
}

/**
 * Removes the parked containers whose time is up (and their channels).
 * @returns how many were removed, and when the next one expires (undefined: none parked).
 */
export async function removeExpiredWarm(docker: Docker, now = Date.now()): Promise<{ removed: number; nextExpiry: number | undefined }> {
  let removed = 0;
  let nextExpiry: number | undefined;
  for (const { container, name } of await listWarm(docker)) {
    if (name.expiresAt <= now) {
      await removeWarm(docker, container.Id, name.tag);
      removed += 1;
    } else nextExpiry = Math.min(nextExpiry ?? Infinity, name.expiresAt);
  }
  return { removed, nextExpiry };
}

/** Removes every parked container now (of one test run, when `testRun` is given), expired or not (`intercode cleanup`). @returns how many. */
export async function removeAllWarm(docker: Docker, testRun?: string): Promise<number> {
  const warm = await listWarm(docker, testRun);
  await Promise.all(warm.map(({ container, name }) => removeWarm(docker, container.Id, name.tag)));
  return warm.length;
}

/**
 * Removes a parked container and its channel. Its channel is claimed first (renamed
 * expired), so no adopter takes it meanwhile; one whose channel is gone was claimed by an
 * adopter that died before renaming it (an expired one: adopters leave a margin).
 */
async function removeWarm(docker: Docker, id: string, tag: string): Promise<void> {
  const expired = join(channelRoot(), `${EXPIRED}-${tag}`);
  await claimChannel(tag, expired);
  await docker
    .getContainer(id)
    .remove({ force: true, v: true })
    .catch(() => undefined);
  await removeChannelDir(expired);
}
