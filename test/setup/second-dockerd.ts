/**
 * A second Docker engine for tests: `dockerd` started as a child of the test process on a
 * socket, data root, exec root and pidfile of its own under one temporary directory, with
 * no bridge, iptables or masquerading (the same flags CI gives the main engine). `remove()`
 * stops it, unmounts what it left mounted, ends any process it left behind and deletes the
 * directory.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { openSync, closeSync, readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { connectEngine } from '../../src/sandbox/docker/engine.js';
import { mountPointsUnder } from '../../src/sandbox/host-mounts.js';

/** Why a second engine cannot be started here (no dockerd binary, not root), or undefined. */
export function secondDockerdUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'starting dockerd needs root';
  const probe = spawnSync('dockerd', ['--version'], { encoding: 'utf8' });
  if (probe.error) return `no dockerd binary (${probe.error.message}); install Debian's docker.io`;
  return undefined;
}

/** Processes whose command line mentions `text`. */
export function processesMentioning(text: string): { pid: number; cmd: string }[] {
  const found: { pid: number; cmd: string }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
      if (cmd.includes(text)) found.push({ pid: Number(entry), cmd });
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** Processes whose cgroup is one of these containers'. */
function processesInContainers(ids: readonly string[]): number[] {
  if (ids.length === 0) return [];
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cgroup = readFileSync(`/proc/${entry}/cgroup`, 'utf8');
      if (ids.some((id) => cgroup.includes(id))) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

export interface SecondDockerdOptions {
  /** Its data root (default: `data` in its directory). */
  dataRoot?: string;
  /** Its storage driver (default: dockerd's choice). */
  storageDriver?: string;
}

export class SecondDockerd {
  private child: ChildProcess | undefined;
  private exited: Promise<void> | undefined;

  private constructor(
    readonly dir: string,
    private readonly options: SecondDockerdOptions,
  ) {}

  static async create(options: SecondDockerdOptions = {}): Promise<SecondDockerd> {
    // Short path: containerd's sockets live under the exec root and socket paths are limited to 108 bytes.
    return new SecondDockerd(await mkdtemp('/tmp/ic-dockerd-'), options);
  }

  get endpoint(): string {
    return `unix://${join(this.dir, 'docker.sock')}`;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  /** Starts dockerd and waits until it answers (at most `timeoutMs`). @throws with the tail of its log. */
  async start(timeoutMs = 60_000): Promise<void> {
    // A dockerd killed with SIGKILL leaves its pidfile, and the next one refuses to start;
    // its containerd's pidfile makes the next one wait for a containerd that is dying.
    await rm(join(this.dir, 'docker.pid'), { force: true });
    await this.clearContainerdPidfile();
    const log = openSync(join(this.dir, 'dockerd.log'), 'a');
    const child = spawn(
      'dockerd',
      [
        `--host=${this.endpoint}`,
        `--data-root=${this.options.dataRoot ?? join(this.dir, 'data')}`,
        ...(this.options.storageDriver ? [`--storage-driver=${this.options.storageDriver}`] : []),
        `--exec-root=${join(this.dir, 'exec')}`,
        `--pidfile=${join(this.dir, 'docker.pid')}`,
        '--bridge=none',
        '--iptables=false',
        '--ip-masq=false',
      ],
      { stdio: ['ignore', log, log] },
    );
    closeSync(log);
    this.child = child;
    this.exited = new Promise((resolve) =>
      child.once('exit', () => {
        if (this.child === child) this.child = undefined;
        resolve();
      }),
    );
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!this.child) break;
      try {
        await connectEngine(this.endpoint, 1_000);
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    const tail = (await readFile(join(this.dir, 'dockerd.log'), 'utf8').catch(() => '')).split('\n').slice(-15).join('\n');
    throw new Error(`second dockerd at ${this.endpoint} did not answer within ${timeoutMs} ms:\n${tail}`);
  }

  /**
   * Waits (at most 10 s, then SIGKILL) for the containerd of a killed dockerd to end — it
   * is sent SIGKILL when its parent dies — and removes its pidfile.
   */
  private async clearContainerdPidfile(): Promise<void> {
    const pidfile = join(this.dir, 'exec', 'containerd', 'containerd.pid');
    const pid = Number(await readFile(pidfile, 'utf8').catch(() => ''));
    const alive = () => {
      try {
        return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8')) && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(this.dir);
      } catch {
        return false;
      }
    };
    if (pid > 0) {
      for (let waited = 0; alive() && waited < 10_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
      if (alive()) process.kill(pid, 'SIGKILL');
    }
    await rm(pidfile, { force: true });
  }

  /** Sends `signal` to dockerd and waits until it has exited (SIGKILL after `timeoutMs`). */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 30_000): Promise<void> {
    const child = this.child;
    if (!child) return;
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }

  /**
   * Stops dockerd (restarting it first if a killed one left containers running, so they are
   * stopped), ends any process still left, unmounts its mounts and deletes its directory.
   * @returns the processes that had to be ended that way (none when all went well).
   */
  async remove(): Promise<{ pid: number; cmd: string }[]> {
    // The containers of a killed daemon outlive it (their shims); a restarted one stops them.
    if (!this.running && processesMentioning(`${this.dir}/`).length > 0) await this.start().catch(() => undefined);
    await this.stop();
    const leftovers = processesMentioning(`${this.dir}/`);
    // Last resort. A shim ended alone would leave its container's processes running: end those too.
    const containerIds = leftovers.flatMap(({ cmd }) => /-id ([0-9a-f]{64})/.exec(cmd)?.[1] ?? []);
    for (const pid of [...leftovers.map((p) => p.pid), ...processesInContainers(containerIds)]) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    for (const mount of mountPointsUnder(this.dir)) spawnSync('umount', ['-l', mount]);
    await rm(this.dir, { recursive: true, force: true });
    return leftovers;
  }
}
