import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The plan the episode-root helper (native/episode-root.c) replays for every root: what a
 * new container of one image and spec is, read from the engine's own OCI spec of a
 * reference container (its `config.json`), that container's init layer and the host's
 * cgroup hierarchies. A change of Docker or runc changes the spec, and so this plan: the
 * helper holds no list of its own.
 */

/** The parts of an OCI runtime spec (config.json) the plan reads. */
export interface OciSpec {
  process: {
    args: string[];
    env: string[];
    capabilities?: { bounding?: string[] };
    rlimits?: { type: string; hard: number; soft: number }[];
  };
  hostname?: string;
  mounts: { destination: string; type?: string; source?: string; options?: string[] }[];
  linux: {
    sysctl?: Record<string, string>;
    resources?: {
      memory?: { limit?: number; swap?: number };
      cpu?: { shares?: number; quota?: number; period?: number };
      pids?: { limit?: number };
    };
    maskedPaths?: string[];
    readonlyPaths?: string[];
    seccomp?: {
      defaultAction: string;
      defaultErrnoRet?: number;
      architectures?: string[];
      syscalls?: { names: string[]; action: string; errnoRet?: number; args?: { index: number; value: number; valueTwo?: number; op: string }[] }[];
    };
  };
}

/** One cgroup hierarchy of the host: its name (`memory`, `name=systemd` as `systemd`, `unified`) and where the pool container sees its `docker/` folder. */
export interface CgroupHierarchy {
  name: string;
  poolPath: string;
}

export interface PlanInputs {
  spec: OciSpec;
  /** The image's layer folders as the overlay lists them, top first (the engine's short links). */
  imageLayers: readonly string[];
  /** The reference container's init layer, as {@link initLayerEntries} read it. */
  initEntries: readonly string[];
  cgroups: readonly CgroupHierarchy[];
  /** The idle process's id in a new container (read from the reference). */
  idlePid: number;
  /** argv[0] the idle process ends up with (the spec has no command of its own): a create is answered once it runs so. */
  idleName?: string;
  /** Ids the engine's exec takes in the container after its process's own (see ReferenceCapture.execGap). */
  execGap: number;
  /** The modes the runtime gives mount points after mounting them (see ReferenceCapture.mountModes). */
  mountModes: readonly { path: string; mode: number }[];
  /** The reference container's devices cgroup rules (its devices.list: the spec's and the runtime's own). */
  devices: readonly string[];
  /** The capability the agent's processes are started without (see harness-capability.ts). */
  harnessCapability: string;
  /** A new container's process's resource limits, by resource number (see ReferenceCapture.rlimits). */
  rlimits: readonly ResourceLimit[];
}

/** One resource limit as /proc/<pid>/limits shows it: a number or `unlimited`. */
export interface ResourceLimit {
  soft: string;
  hard: string;
}

// Linux mount flags (sys/mount.h).
const MS = { RDONLY: 1, NOSUID: 2, NODEV: 4, NOEXEC: 8, REMOUNT: 32, NOATIME: 1024, NODIRATIME: 2048, BIND: 4096, REC: 16384, PRIVATE: 1 << 18, SLAVE: 1 << 19, SHARED: 1 << 20, RELATIME: 1 << 21, STRICTATIME: 1 << 24, UNBINDABLE: 1 << 17 };
const FLAG_OPTIONS: Record<string, number> = {
  ro: MS.RDONLY, nosuid: MS.NOSUID, nodev: MS.NODEV, noexec: MS.NOEXEC, bind: MS.BIND, rbind: MS.BIND | MS.REC,
  strictatime: MS.STRICTATIME, relatime: MS.RELATIME, noatime: MS.NOATIME, nodiratime: MS.NODIRATIME,
};
const CLEARING_OPTIONS = new Set(['rw', 'suid', 'dev', 'exec', 'atime', 'diratime']);
const PROPAGATION: Record<string, number> = {
  private: MS.PRIVATE, rprivate: MS.PRIVATE | MS.REC, slave: MS.SLAVE, rslave: MS.SLAVE | MS.REC,
  shared: MS.SHARED, rshared: MS.SHARED | MS.REC, unbindable: MS.UNBINDABLE, runbindable: MS.UNBINDABLE | MS.REC,
};

/** An OCI mount's options as runc splits them: flags, propagation, and the rest as the file system's data. */
export function mountFlags(options: readonly string[]): { flags: number; propagation: number; data: string } {
  let flags = 0;
  let propagation = 0;
  const data: string[] = [];
  for (const option of options) {
    if (option in FLAG_OPTIONS) flags |= FLAG_OPTIONS[option]!;
    else if (option in PROPAGATION) propagation |= PROPAGATION[option]!;
    else if (!CLEARING_OPTIONS.has(option)) data.push(option);
  }
  return { flags, propagation, data: data.join(',') };
}

/** Refuses a field the line format cannot carry. */
function field(text: string, what: string): string {
  if (/[\t\n\0]/.test(text)) throw new Error(`episode-root plan: ${what} holds a tab, newline or NUL: ${JSON.stringify(text)}`);
  return text;
}

/** Where the helper puts each root's channel folder and hostname file (see episode-root.c). */
export const CHANNEL_PLACEHOLDER = '{channel}';
export const HOSTNAME_PLACEHOLDER = '{hostname}';

/**
 * The entries of an init layer, parents first: folders, empty files and links with their
 * modes (the engine makes them empty, owned by root).
 */
export function initLayerEntries(dir: string): string[] {
  const lines: string[] = [];
  const walk = (relative: string) => {
    for (const name of readdirSync(join(dir, relative)).sort()) {
      const path = `${relative}/${name}`;
      const stats = lstatSync(join(dir, path));
      const mode = (stats.mode & 0o7777).toString(8);
      if (stats.isDirectory()) {
        lines.push(`init\td\t${field(path, 'init path')}\t${mode}`);
        walk(path);
      } else if (stats.isSymbolicLink()) lines.push(`init\tl\t${field(path, 'init path')}\t777\t${field(readlinkSync(join(dir, path)), 'link')}`);
      else if (stats.isFile() && stats.size === 0) lines.push(`init\tf\t${field(path, 'init path')}\t${mode}`);
      else throw new Error(`episode-root plan: the init layer holds ${path}, neither a folder, a link nor an empty file`);
    }
  };
  walk('');
  return lines;
}

/** The plan's text (one line per item, tab-separated; see read_plan in episode-root.c). */
export function rootPlan(inputs: PlanInputs): string {
  const { spec } = inputs;
  const lines: string[] = [];
  lines.push(`lowers\t${inputs.imageLayers.map((l) => field(l, 'layer')).join(':')}`);
  for (const mount of spec.mounts) {
    const { flags, propagation, data } = mountFlags(mount.options ?? []);
    const source = mount.destination === '/run/intercode' ? CHANNEL_PLACEHOLDER : mount.destination === '/etc/hostname' ? HOSTNAME_PLACEHOLDER : (mount.source ?? mount.type ?? 'none');
    lines.push(['mount', mount.destination, mount.type ?? 'bind', source, String(flags), String(propagation), data].map((f) => field(f, 'mount')).join('\t'));
  }
  for (const { path, mode } of inputs.mountModes) lines.push(`mode\t${field(path, 'path')}\t${mode.toString(8)}`);
  for (const path of spec.linux.readonlyPaths ?? []) lines.push(`readonly\t${field(path, 'path')}`);
  for (const path of spec.linux.maskedPaths ?? []) lines.push(`masked\t${field(path, 'path')}`);
  lines.push(...inputs.initEntries);
  for (const env of spec.process.env) lines.push(`env\t${field(env, 'env')}`);
  for (const arg of spec.process.args) lines.push(`arg\t${field(arg, 'arg')}`);
  for (const [key, value] of Object.entries(spec.linux.sysctl ?? {})) lines.push(`sysctl\t${field(key, 'sysctl')}\t${field(value, 'sysctl')}`);
  for (const cap of spec.process.capabilities?.bounding ?? []) lines.push(`cap\t${field(cap, 'cap')}`);
  lines.push(`harness-cap\t${inputs.harnessCapability}`);
  inputs.rlimits.forEach((limit, resource) => lines.push(`rlimit\t${resource}\t${limit.soft}\t${limit.hard}`));
  lines.push(`hostname\t${field(spec.hostname ?? '', 'hostname')}`);
  lines.push(`idle-last-pid\t${inputs.idlePid}`);
  if (inputs.idleName !== undefined) lines.push(`idle-name\t${field(inputs.idleName, 'idle name')}`);
  lines.push(`exec-gap\t${inputs.execGap}`);
  for (const cgroup of inputs.cgroups) lines.push(`cgroup\t${field(cgroup.name, 'cgroup')}\t${field(cgroup.poolPath, 'cgroup')}`);
  lines.push(...cgroupLimits(spec, inputs.cgroups, inputs.devices));
  const seccomp = spec.linux.seccomp;
  if (seccomp) {
    lines.push(`seccomp-default\t${seccomp.defaultAction}\t${seccomp.defaultErrnoRet ?? ''}`);
    for (const arch of seccomp.architectures ?? []) lines.push(`seccomp-arch\t${arch}`);
    for (const rule of seccomp.syscalls ?? []) {
      const args = (rule.args ?? []).map((a) => `${a.index}:${a.op}:${a.value}:${a.valueTwo ?? 0}`);
      for (const name of rule.names) lines.push(['seccomp', rule.action, rule.errnoRet === undefined ? '' : String(rule.errnoRet), name, ...args].join('\t'));
    }
  }
  return `${lines.join('\n')}\n`;
}

/** The cgroup files runc writes for the spec's resources (v1), in the order it writes them. */
function cgroupLimits(spec: OciSpec, cgroups: readonly CgroupHierarchy[], devices: readonly string[]): string[] {
  const has = (name: string) => cgroups.some((c) => c.name === name);
  const resources = spec.linux.resources ?? {};
  const lines: string[] = [];
  if (has('cpuset')) lines.push('limit\tcpuset\tcpuset.cpus\t{parent}', 'limit\tcpuset\tcpuset.mems\t{parent}');
  if (has('memory') && resources.memory?.limit) {
    lines.push(`limit\tmemory\tmemory.limit_in_bytes\t${resources.memory.limit}`);
    if (resources.memory.swap) lines.push(`limit\tmemory\tmemory.memsw.limit_in_bytes\t${resources.memory.swap}`);
  }
  if (has('cpu') && resources.cpu) {
    if (resources.cpu.shares) lines.push(`limit\tcpu\tcpu.shares\t${resources.cpu.shares}`);
    if (resources.cpu.period) lines.push(`limit\tcpu\tcpu.cfs_period_us\t${resources.cpu.period}`);
    if (resources.cpu.quota) lines.push(`limit\tcpu\tcpu.cfs_quota_us\t${resources.cpu.quota}`);
  }
  if (has('pids') && resources.pids?.limit) lines.push(`limit\tpids\tpids.max\t${resources.pids.limit}`);
  if (has('devices')) {
    // Deny all, then allow exactly what the reference's cgroup allowed.
    lines.push('limit\tdevices\tdevices.deny\ta');
    for (const rule of devices) lines.push(`limit\tdevices\tdevices.allow\t${field(rule, 'device rule')}`);
  }
  return lines;
}

/**
 * The host's cgroup hierarchies (v1 controllers, named ones and the unified one), read from
 * this process's mountinfo: name and host mount point.
 */
export function hostCgroupHierarchies(mountinfo = readFileSync('/proc/self/mountinfo', 'utf8')): { name: string; hostPath: string }[] {
  const found: { name: string; hostPath: string }[] = [];
  for (const line of mountinfo.split('\n')) {
    const [before, after] = line.split(' - ');
    if (!before || !after) continue;
    const mountPoint = before.split(' ')[4] ?? '';
    const [type, , superOptions = ''] = after.split(' ');
    if (type === 'cgroup2') found.push({ name: 'unified', hostPath: mountPoint });
    else if (type === 'cgroup') {
      const options = superOptions.split(',').filter((o) => o !== 'rw' && o !== 'ro');
      const named = options.find((o) => o.startsWith('name='));
      found.push({ name: named ? named.slice('name='.length) : options.join(','), hostPath: mountPoint });
    }
  }
  return found;
}
