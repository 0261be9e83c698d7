/**
 * `bench idle`: how many idle live episodes one host holds. N bash episodes' sandboxes are
 * made as the env makes them, each with its shell open (what a live episode waiting for its
 * next action holds), and the host's available memory is read before and after: its fall ÷ N
 * is the memory of one idle episode, everything included (the sandbox's processes, its
 * kernel objects — namespaces, mounts, cgroups — and this process's side).
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { cpus } from 'node:os';
import { oneOf } from '../src/errors.js';
import { createBashEnvs } from '../envs/bash/index.js';
import type { Workspace } from '../src/pool/types.js';
import { EngineSet } from '../src/sandbox/backends/engine-set.js';
import { installShutdownHandlers } from '../src/sandbox/lifecycle/shutdown.js';
import { ShellSession } from '../src/sandbox/shell/shell-session.js';
import { SANDBOX_KINDS, type SandboxKind } from '../src/sandbox/types.js';
import { parseBenchArgs, positiveNumber } from './bench-args.js';
import type { Bench, BenchIO } from './types.js';

const USAGE = `Usage: npm run bench -- idle [--sandbox-kind containers|episode-roots|auto] [--count N] [--json]

Makes N (default 200) bash episodes' sandboxes on the local engine, as the bash env makes
them, each with its shell open, and reads the host's MemAvailable before and after (3 s
settled each time). Reports the memory of one idle episode (the fall ÷ N: its processes,
its kernel objects and this process's side), the seconds taken to make them, and the idle
episodes that 90% of this host's memory would hold at that rate (a projection: memory
only). Where making one more fails first (a limit of the host or of this process: open
files, processes), the bench stops there, measures what is live and says why (stoppedBy).
Everything made is removed at the end.
--sandbox-kind K  containers (default), episode-roots, or auto (roots where the engine supports them).
--json prints one object.
`;

export interface IdleBenchResult {
  sandboxKind: SandboxKind;
  /** Made and live at once: --count, or, where making one more failed (see stoppedBy), those made less one (removed to read the figures). */
  episodes: number;
  /** Why no more could be made (a limit of the host or of this process), when fewer than --count. */
  stoppedBy?: string;
  makeSeconds: number;
  memoryPerIdleEpisodeMiB: number;
  /** This process's resident memory per episode (part of the figure above). */
  harnessPerEpisodeKiB: number;
  /** 90% of MemTotal ÷ memoryPerIdleEpisodeMiB. */
  projectedIdleEpisodesPerHost: number;
  hostMemoryGiB: number;
  hostCores: number;
}

/** A reader of /proc/meminfo's fields in bytes, its file held open: at a descriptor limit (a way the bench can stop) it is still read. */
function meminfoReader(): { read(field: string): number; close(): void } {
  const file = openSync('/proc/meminfo', 'r');
  const buffer = Buffer.alloc(8192);
  return {
    read(field) {
      const text = buffer.toString('utf8', 0, readSync(file, buffer, 0, buffer.length, 0));
      return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? Number.NaN) * 1024;
    },
    close: () => closeSync(file),
  };
}
const settle = () => new Promise((resolve) => setTimeout(resolve, 3_000));
const MiB = 2 ** 20;

async function measureIdle(kind: SandboxKind, count: number, log: (line: string) => void): Promise<IdleBenchResult> {
  const [env] = await createBashEnvs({ goldCache: false, engines: EngineSet.local({ kind }) }, 1);
  const factory = env!.workspaceFactory();
  const live: { workspace: Workspace; shell: ShellSession }[] = [];
  const memory = meminfoReader();
  const meminfo = (field: string) => memory.read(field);
  try {
    // One made and removed first: the pool (roots) or the image's first start, not per episode.
    const first = await factory.create();
    await factory.destroy(first);
    await settle();
    const [available, rss] = [meminfo('MemAvailable'), process.memoryUsage().rss];
    const started = performance.now();
    let stoppedBy: string | undefined;
    for (let i = 0; i < count && stoppedBy === undefined; i++) {
      try {
        const workspace = await factory.create();
        live.push({ workspace, shell: await ShellSession.open(workspace.sandbox) });
      } catch (error) {
        // A limit of the host or of this process: what was reached is the figure.
        stoppedBy = (error as Error).message + ((error as Error).cause ? `: ${String((error as Error).cause)}` : '');
        log(`stopped at ${live.length} live episodes: ${stoppedBy}`);
      }
      if ((i + 1) % 100 === 0) log(`${i + 1}/${count} idle episodes live`);
    }
    if (stoppedBy !== undefined && live.length > 0) {
      // Stopped by a limit of this process, perhaps its descriptors: one episode is removed, so that its figures can be read.
      const last = live.pop()!;
      last.shell.close();
      await factory.destroy(last.workspace);
    }
    if (live.length === 0) throw new Error(`no episode could be made: ${stoppedBy ?? ''}`);
    const makeSeconds = (performance.now() - started) / 1000;
    await settle();
    const perEpisode = (available - meminfo('MemAvailable')) / live.length;
    const round = (value: number, digits = 2) => Number(value.toFixed(digits));
    return {
      sandboxKind: kind,
      episodes: live.length,
      ...(stoppedBy !== undefined ? { stoppedBy } : {}),
      makeSeconds: round(makeSeconds, 1),
      memoryPerIdleEpisodeMiB: round(perEpisode / MiB),
      harnessPerEpisodeKiB: round((process.memoryUsage().rss - rss) / live.length / 1024, 1),
      projectedIdleEpisodesPerHost: Math.floor((0.9 * meminfo('MemTotal')) / perEpisode),
      hostMemoryGiB: round(meminfo('MemTotal') / 2 ** 30, 1),
      hostCores: cpus().length,
    };
  } finally {
    log(`removing ${live.length} sandboxes`);
    for (const { shell } of live) shell.close();
    await Promise.all(live.map(({ workspace }) => factory.destroy(workspace).catch(() => undefined)));
    await env!.close();
    memory.close();
  }
}

export const idleBench: Bench = {
  name: 'idle',
  summary: 'memory per idle live episode, and how many one host holds (--sandbox-kind, --count)',
  async run(args: readonly string[], io: BenchIO): Promise<number> {
    let kind: SandboxKind;
    let count: number;
    let json: boolean;
    try {
      const values = parseBenchArgs('idle', args, { 'sandbox-kind': { type: 'string' }, count: { type: 'string' } });
      if (values === 'help') {
        io.stdout.write(USAGE);
        return 0;
      }
      kind = values['sandbox-kind'] === undefined ? 'containers' : oneOf('--sandbox-kind', String(values['sandbox-kind']), SANDBOX_KINDS);
      count = positiveNumber('--count', values.count, 200, true);
      json = values.json === true;
    } catch (error) {
      io.stderr.write(`bench idle: ${(error as Error).message}\n\n${USAGE}`);
      return 2;
    }
    const uninstall = installShutdownHandlers();
    try {
      const result = await measureIdle(kind, count, (line) => io.stderr.write(`[idle] ${line}\n`)).catch((error: unknown) => {
        io.stderr.write(`bench idle: ${(error as Error).message}\n`);
        return undefined;
      });
      if (!result) return 1;
      io.stdout.write(
        json
          ? `${JSON.stringify(result)}\n`
          : `${result.episodes} idle ${kind} episodes (a shell open in each), made in ${result.makeSeconds} s: ${result.memoryPerIdleEpisodeMiB} MiB each (of it ${result.harnessPerEpisodeKiB} KiB in this process); 90% of this host's ${result.hostMemoryGiB} GiB would hold ~${result.projectedIdleEpisodesPerHost} (${result.hostCores} cores)${result.stoppedBy ? `; stopped at ${result.episodes}: ${result.stoppedBy}` : ''}\n`,
      );
      return 0;
    } finally {
      uninstall();
    }
  },
};
