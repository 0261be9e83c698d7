import type Docker from 'dockerode';
import { cpus, loadavg, release, totalmem } from 'node:os';

/** The machine a bench ran on: this process's host and the Docker engine it talked to. */
export interface MachineInfo {
  hostCores: number;
  cpuModel: string;
  hostMemoryBytes: number;
  kernel: string;
  node: string;
  /** 1-minute load average when the bench started (other work on the host skews results). */
  loadAverage1m: number;
  dockerServerVersion: string;
  engineCpus: number | undefined;
  engineMemoryBytes: number | undefined;
  engineOs: string | undefined;
  cgroupVersion: string | undefined;
  storageDriver: string | undefined;
}

/**
 * Describes the host and the engine.
 * @throws the engine's error when it does not answer `version` (callers connected first).
 */
export async function describeMachine(docker: Docker): Promise<MachineInfo> {
  const version = await docker.version();
  const info = (await docker.info().catch(() => ({}))) as Record<string, unknown>;
  const host = cpus();
  return {
    hostCores: host.length,
    cpuModel: host[0]?.model.trim() ?? 'unknown',
    hostMemoryBytes: totalmem(),
    kernel: release(),
    node: process.version,
    loadAverage1m: loadavg()[0] ?? 0,
    dockerServerVersion: version.Version,
    engineCpus: typeof info.NCPU === 'number' ? info.NCPU : undefined,
    engineMemoryBytes: typeof info.MemTotal === 'number' ? info.MemTotal : undefined,
    engineOs: typeof info.OperatingSystem === 'string' ? info.OperatingSystem : undefined,
    cgroupVersion: typeof info.CgroupVersion === 'string' ? info.CgroupVersion : undefined,
    storageDriver: typeof info.Driver === 'string' ? info.Driver : undefined,
  };
}

/** Bytes as GiB with one decimal. */
export function gib(bytes: number): string {
  return `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
}

/** Multi-line description for a human report. */
export function formatMachine(machine: MachineInfo): string[] {
  const engine = [
    `Docker ${machine.dockerServerVersion}`,
    machine.engineOs,
    machine.engineCpus === undefined ? undefined : `${machine.engineCpus} CPUs`,
    machine.engineMemoryBytes === undefined ? undefined : gib(machine.engineMemoryBytes),
    machine.cgroupVersion === undefined ? undefined : `cgroup v${machine.cgroupVersion}`,
    machine.storageDriver,
  ].filter((part): part is string => part !== undefined);
  return [
    `host:   ${machine.hostCores} cores (${machine.cpuModel}), ${gib(machine.hostMemoryBytes)}, Linux ${machine.kernel}, Node ${machine.node}`,
    `engine: ${engine.join(', ')}`,
    `load:   ${machine.loadAverage1m.toFixed(2)} (1-min load average at start)`,
  ];
}
