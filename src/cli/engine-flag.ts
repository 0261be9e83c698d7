import type { Command } from 'commander';
import { ConfigError, oneOf } from '../errors.js';
import { defaultEndpoint } from '../sandbox/docker/engine.js';
import type { EngineTarget } from '../sandbox/backends/backend.js';
import { parseEngineTargets } from '../sandbox/backends/endpoints.js';
import { EngineSet } from '../sandbox/backends/engine-set.js';
import { SANDBOX_KINDS, type SandboxSettings } from '../sandbox/types.js';

/** Commander attribute of the flag {@link addEngineFlag} adds. */
export interface EngineFlags {
  /** Every value given, in order; undefined when none. */
  engine?: string[];
  /** The OCI runtime sandboxes run under (`--runtime`). */
  runtime?: string;
  /** The per-sandbox disk limit in MiB (`--disk-limit`). */
  diskLimit?: string;
  /** What a sandbox is (`--sandbox-kind`). */
  sandboxKind?: string;
}

/**
 * Adds `--engine <endpoint[=weight]>`, repeatable: the Docker engines sandboxes are spread
 * over, each with a capacity weight (default 1), or one `k8s[:CONTEXT[/NAMESPACE]]`.
 * None given: DOCKER_HOST or the local socket.
 */
export function addEngineFlag(command: Command): Command {
  return command.option(
    '--engine <endpoint[=weight]>',
    'a Docker engine to run sandboxes on, e.g. unix:///run/docker-b.sock=2 or tcp://127.0.0.1:2375; repeat for several, weighted by capacity (default: DOCKER_HOST or /var/run/docker.sock); ' +
      'or k8s[:CONTEXT[/NAMESPACE]] for pods on a Kubernetes cluster (KUBECONFIG, else in-cluster config; see docs/kubernetes.md)',
    (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
  );
}

/** Adds `--engine` and the flags of the sandboxes a command starts: `--runtime` and `--disk-limit` (see {@link sandboxSettings}). */
export function addSandboxFlags(command: Command): Command {
  return addEngineFlag(command)
    .option(
      '--runtime <name>',
      "the engine's OCI runtime for sandboxes: runc, or runsc for gVisor's user-space kernel (stronger isolation, slower steps; see docs/security.md); on Kubernetes, the name of a RuntimeClass of the cluster (runc: the node's default). Default: INTERCODE_RUNTIME, else the engine's default",
    )
    .option(
      '--sandbox-kind <kind>',
      'episode-roots: each sandbox a fresh root file system and namespaces made in a few milliseconds inside one pool container per image, equal to a new container by construction (local runc engines run as root; see docs/design/episode-roots.md); containers: one engine container per sandbox; auto: episode roots where the engine supports them, else containers. Default: INTERCODE_SANDBOX_KIND, else auto (`intercode doctor` says whether this engine supports episode roots, and why not)',
    )
    .option(
      '--disk-limit <MiB>',
      "how much each sandbox may write to its file system; held by the engine on btrfs, else by a file-size limit and checks (see docs/security.md). Default: INTERCODE_DISK_LIMIT_MIB, else 2048",
    );
}

/**
 * The engines the flags name (the default engine when none).
 * @throws ConfigError naming --engine and the bad value.
 */
export function engineTargets(flags: Partial<EngineFlags>): EngineTarget[] {
  return parseEngineTargets(flags.engine ?? [], defaultEndpoint());
}

/**
 * The engine set a command's envs share, from its `--engine` flags; it connects when the
 * first env needs it. Engine state changes (down, back) and image copies go to `log`.
 * The command hands it to {@link releaseEngines} once its envs are closed.
 * @throws ConfigError naming --engine and the bad value.
 */
export function commandEngines(flags: Partial<EngineFlags>, log: (line: string) => void): EngineSet {
  return new EngineSet(engineTargets(flags), { log, sandboxes: sandboxSettings(flags) });
}

/** The user-facing variables {@link sandboxSettings} reads when a flag is not given. */
export type SandboxVariables = Readonly<Partial<Record<'INTERCODE_RUNTIME' | 'INTERCODE_DISK_LIMIT_MIB' | 'INTERCODE_SANDBOX_KIND', string | undefined>>>;

/**
 * What every sandbox of the command is made with, on every engine: `--runtime`, else
 * INTERCODE_RUNTIME; `--disk-limit`, else INTERCODE_DISK_LIMIT_MIB; `--sandbox-kind`, else
 * INTERCODE_SANDBOX_KIND, else `auto` (episode roots where the engine supports them). Read here, once, at
 * the CLI's boundary; the runtimes receive the result (see EngineSet, SandboxSettings).
 * @throws ConfigError naming the flag (or the variable) and the bad value.
 */
export function sandboxSettings(flags: Partial<EngineFlags>, env: SandboxVariables = process.env as SandboxVariables): SandboxSettings {
  const settings: SandboxSettings = {};
  const runtime = flags.runtime ?? (env.INTERCODE_RUNTIME || undefined);
  if (runtime !== undefined) {
    const source = flags.runtime !== undefined ? '--runtime' : 'INTERCODE_RUNTIME';
    if (!/^[A-Za-z0-9][\w.-]*$/.test(runtime)) throw new ConfigError(source, `must be a runtime name such as runc or runsc, got "${runtime}"`);
    settings.ociRuntime = runtime;
  }
  const diskLimit = flags.diskLimit ?? (env.INTERCODE_DISK_LIMIT_MIB || undefined);
  if (diskLimit !== undefined) {
    const source = flags.diskLimit !== undefined ? '--disk-limit' : 'INTERCODE_DISK_LIMIT_MIB';
    const mib = Number(diskLimit);
    if (!Number.isInteger(mib) || mib < 1) throw new ConfigError(source, `must be a positive whole number of MiB, got "${diskLimit}"`);
    settings.diskLimitBytes = mib * 2 ** 20;
  }
  const kind = flags.sandboxKind ?? (env.INTERCODE_SANDBOX_KIND || undefined);
  settings.kind = kind === undefined ? 'auto' : oneOf(flags.sandboxKind !== undefined ? '--sandbox-kind' : 'INTERCODE_SANDBOX_KIND', kind, SANDBOX_KINDS);
  return settings;
}

/** Stops the engines' health checks; with several, first logs how many sandboxes each engine took. */
export function releaseEngines(engines: EngineSet, log: (line: string) => void): void {
  const status = engines.status();
  if (status) log(`sandboxes per engine: ${status.map((e) => `${e.endpoint} ${e.created}${e.downs > 0 ? ` (down ${e.downs}×)` : ''}`).join(', ')}`);
  engines.close();
}
