/**
 * Where the host's CPU time goes during a bench phase, read from Linux /proc: the bench's
 * own Node process, dockerd, containerd, the per-container containerd-shims, runc, the
 * processes inside the bench's sandboxes, other containers, and everything else. Only
 * meaningful when the engine runs on this host; elsewhere (no /proc, a remote engine) the
 * snapshot is `undefined` and reports omit the breakdown.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Process groups, in report order. "other" is host busy time not seen in any live process. */
export const CPU_GROUPS = [
  'bench node',
  'dockerd',
  'containerd',
  'containerd-shim',
  'runc',
  'bench sandboxes',
  'other containers',
  'other',
] as const;
export type CpuGroup = (typeof CPU_GROUPS)[number];

/** USER_HZ: the unit of /proc CPU times; 100 on every mainstream Linux architecture. */
export const TICKS_PER_SECOND = 100;

export interface CpuSnapshot {
  at: number;
  /** Busy and total ticks summed over all CPUs (/proc/stat). */
  busyTicks: number;
  totalTicks: number;
  /** utime + stime per pid, with its group. */
  processes: Map<number, { group: CpuGroup; ticks: number }>;
}

/** Cores' worth of CPU used per group over an interval (1.0 = one core fully busy). */
export interface CpuUsage {
  wallSeconds: number;
  /** Whole-host busy cores. */
  busyCores: number;
  groups: Record<CpuGroup, number>;
}

/** Busy and total ticks summed over all CPUs so far, from /proc/stat (unit: USER_HZ). */
export function readHostTicks(): { busy: number; total: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already inside user).
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = fields;
  const busy = user + nice + system + irq + softirq + steal;
  return { busy, total: busy + idle + iowait };
}

function classify(pid: number, comm: string, ownContainers: readonly string[]): CpuGroup {
  if (pid === process.pid) return 'bench node';
  if (comm === 'dockerd') return 'dockerd';
  if (comm === 'containerd') return 'containerd';
  if (comm.startsWith('containerd-shim')) return 'containerd-shim';
  if (comm === 'runc' || comm.startsWith('runc:')) return 'runc';
  let cgroup = '';
  try {
    cgroup = readFileSync(`/proc/${pid}/cgroup`, 'utf8');
  } catch {
    return 'other';
  }
  if (ownContainers.some((id) => cgroup.includes(id))) return 'bench sandboxes';
  return /docker[/-]/.test(cgroup) ? 'other containers' : 'other';
}

/**
 * Reads the host's CPU counters and every process's CPU time.
 * @param ownContainers full container ids of the bench's sandboxes.
 * @returns undefined where /proc is not available (not Linux).
 */
export function takeCpuSnapshot(ownContainers: readonly string[]): CpuSnapshot | undefined {
  let host: { busy: number; total: number };
  let pids: string[];
  try {
    host = readHostTicks();
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return undefined;
  }
  const processes = new Map<number, { group: CpuGroup; ticks: number }>();
  for (const name of pids) {
    const pid = Number(name);
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // exited since the listing
    }
    const open = stat.indexOf('(');
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(open + 1, close);
    const rest = stat.slice(close + 2).split(' ');
    // After "pid (comm) ": state is field 3, utime field 14, stime field 15.
    const ticks = Number(rest[11]) + Number(rest[12]);
    processes.set(pid, { group: classify(pid, comm, ownContainers), ticks });
  }
  return { at: performance.now(), busyTicks: host.busy, totalTicks: host.total, processes };
}

/**
 * CPU used per group between two snapshots. Processes that started in between count from
 * zero; those that ended in between (each `docker exec`'s runc, for example) are lost from
 * their group and show up under "other".
 */
export function cpuUsageBetween(before: CpuSnapshot, after: CpuSnapshot): CpuUsage {
  const wallSeconds = (after.at - before.at) / 1000;
  const perCore = (ticks: number) => ticks / TICKS_PER_SECOND / wallSeconds;
  const groups = Object.fromEntries(CPU_GROUPS.map((group) => [group, 0])) as Record<CpuGroup, number>;
  let seen = 0;
  for (const [pid, now] of after.processes) {
    const then = before.processes.get(pid);
    const delta = Math.max(0, now.ticks - (then?.ticks ?? 0));
    groups[now.group] += perCore(delta);
    seen += delta;
  }
  const busy = after.busyTicks - before.busyTicks;
  groups.other += perCore(Math.max(0, busy - seen));
  return { wallSeconds, busyCores: perCore(busy), groups };
}
