
/**
 * The sandbox runtime contract. A sandbox is an isolated machine that runs processes and
 * holds files; it knows nothing of tasks, datasets or rewards. Requests and results are
 * plain data so another transport (a remote host, Kubernetes) is just another runtime.
 */

export interface ResourceLimits {
  /** Memory limit in bytes (swap is not allowed beyond it). */
  memoryBytes: number;
  /** Maximum number of processes and threads. */
  pids: number;
  /** CPU share, in cores (0.5 = half a core). */
  cpus: number;
  /**
   * Bytes the sandbox may write to its own file system (its writable layer). Default
   * {@link DEFAULT_DISK_BYTES}; how it is enforced depends on the engine (see {@link DiskLimit}).
   */
  diskBytes?: number;
}

/**
 * How a sandbox's disk limit is held:
 * - `engine`: the engine's storage driver refuses writes past it (Docker's `--storage-opt
 *   size=` on btrfs or zfs): a write fails with "Disk quota exceeded";
 * - `watched`: no single file can grow past it (file-size rlimit: the write fails, the
 *   writer gets SIGXFSZ), and the layer's size on the host is checked while each command
 *   runs and when it ends: a command that takes it past the limit is killed and the episode
 *   ends truncated (`disk-limit`); between commands a guard stops processes that go on
 *   writing past it (DiskGuard). Many files written faster than the check can overshoot
 *   the limit for a moment (docs/security.md gives the measured figure);
 * - `file-size`: only the file-size rlimit (the layer cannot be read from here, e.g. a
 *   remote engine).
 */
export type DiskEnforcement = 'engine' | 'watched' | 'file-size';

export interface DiskLimit {
  readonly limitBytes: number;
  readonly enforcement: DiskEnforcement;
  /**
   * With `watched`: the writable layer's size when it was over the limit at its last
   * measurement, else undefined. Never waits (a new measurement runs in the background).
   */
  exceeded?(): number | undefined;
  /** As {@link exceeded}, waiting for a new measurement when the layer may have changed since the last. */
  exceededNow?(): Promise<number | undefined>;
}

export interface SandboxSpec {
  /** Image reference (tag or id). */
  image: string;
  /** Fixed host name, so outputs that print it are the same in every sandbox. */
  hostname: string;
  limits: ResourceLimits;
  /** Linux capabilities kept; all others are dropped. */
  capabilities: readonly string[];
  /** Extra labels; the runtime always adds its own ownership labels. */
  labels?: Readonly<Record<string, string>>;
  /** Host directories made visible inside (e.g. a directory holding a server's Unix socket). */
  mounts?: readonly Mount[];
  /**
   * The sandbox's main process, e.g. a database server. Default: an idle process named
   * {@link IDLE_PROCESS_NAME}. Either way it runs under an init that reaps orphans.
   */
  command?: readonly string[];
}

export interface Mount {
  /** Absolute path on the engine's host. */
  hostPath: string;
  /** Absolute path inside the sandbox. */
  containerPath: string;
  readOnly?: boolean;
}

export interface ExecOptions {
  workdir?: string;
  env?: Readonly<Record<string, string>>;
  /** Give up waiting after this long; the process may be left running (see Sandbox.exec). */
  timeoutMs?: number;
  /**
   * Stop reading after this many bytes of output: what came first is kept, the stream is
   * closed, and the process may be left running, as after a timeout (default: no limit, for
   * the harness's own archives). Give one wherever what runs could be an agent's (a replaced
   * `bash` that prints without end, an action's output).
   */
  maxOutputBytes?: number;
  /** Runs an agent's command (see AttachOptions.confined). */
  confined?: boolean;
}

/** Result of a one-shot process. Output is stdout and stderr interleaved as produced. */
export interface ExecResult {
  /** Exit code, or null when it could not be read (timed out, engine lost it). */
  exitCode: number | null;
  output: Buffer;
  timedOut: boolean;
  /**
   * The output passed ExecOptions.maxOutputBytes: `output` is its first part, the exit code
   * null, and `outputBytes` what was read before the stream was closed (the process wrote at least that).
   */
  outputLimited?: boolean;
  outputBytes?: number;
  durationMs: number;
}

export interface AttachOptions {
  workdir?: string;
  env?: Readonly<Record<string, string>>;
  /**
   * Runs an agent's commands: started without the harness's capability (see
   * harness-capability.ts), so that it and all it starts cannot ptrace, or open the
   * /proc/<pid>/{mem,fd,environ} of, the harness's processes in the sandbox.
   */
  confined?: boolean;
}

/** A long-lived process whose stdin we write and whose merged stdout/stderr we read. */
export interface AttachedProcess {
  /**
   * True when the process's descriptor 4 is a channel of its own, apart from its
   * stdout/stderr, that its children do not inherit (see ShellSession's markers).
   */
  readonly hasControlChannel?: boolean;
  write(data: string): void;
  /**
   * Registers the consumer. `output` gets every chunk of stdout/stderr in order; `control`
   * every chunk of the control channel, when there is one; `exit` fires once.
   */
  listen(handlers: { output(chunk: Buffer): void; control?(chunk: Buffer): void; exit(): void }): void;
  /** Closes our end; the process sees EOF on stdin. */
  close(): void;
}

/**
 * One sandbox. Every method throws {@link SandboxError} (code SANDBOX_LOST) when the
 * sandbox's container is gone or the engine stopped answering — never for a command that
 * merely fails.
 */
export interface Sandbox {
  readonly id: string;
  readonly spec: SandboxSpec;
  /**
   * True where a process of the agent's can open the `/proc/<pid>/fd/*` and `environ` of the
   * harness's processes whatever it was started with (gVisor 20221219 makes no access check
   * there): it could then read the commands a harness's shell is sent, so what must reach
   * that shell unread (the scorer's stop pass) is run by an exec of its own instead.
   */
  readonly harnessDescriptorsExposed?: boolean;
  /** Runs one process to completion (one engine round trip per call: slow, ~40 ms). */
  exec(argv: readonly string[], options?: ExecOptions): Promise<ExecResult>;
  /** Starts a process with stdin and merged stdout/stderr attached over one stream. */
  attach(argv: readonly string[], options?: AttachOptions): Promise<AttachedProcess>;
  /** Kills every process in the sandbox and starts its init again; files are kept. */
  restartProcesses(): Promise<void>;
  /** Extracts a tar archive into `destDir`. */
  putArchive(tar: Buffer, destDir: string): Promise<void>;
  /** Returns a tar archive of `path`. */
  getArchive(path: string): Promise<Buffer>;
  /**
   * Paths of the sandbox's own file system that differ from its image (bind mounts and the
   * kernel's pseudo file systems excluded). With `reference` — an untouched sandbox of the
   * same image — exactly those that differ from it, which a runtime may find much faster.
   */
  changes(reference?: Sandbox): Promise<FileSystemChange[]>;
  /** The sandbox's disk limit and how it is held (absent: none). */
  readonly disk?: DiskLimit;
  /**
   * Optional: start later attached processes (and copy archives in) through `shell`, a
   * harness shell already in this sandbox, instead of through the engine — where the
   * runtime's transport allows it.
   */
  launchThrough?(shell: HarnessShell): void;
  // What some runtimes can do beyond the core, one named capability each (absent: it cannot).
  /** Reading and setting the sandbox from this host, with no process of it involved. */
  readonly fromHost?: SandboxFromHost;
  /** Its written layer carried to another sandbox of the image (checkpoints, forks). */
  readonly writtenLayer?: WrittenLayer;
  /** Shells of ours handed to the next owner of the sandbox (keep-warm). */
  readonly handOver?: ShellHandOver;
  /** Removes the sandbox and everything in it. Idempotent. */
  destroy(): Promise<void>;
}

/** A sandbox read and set from this host (see Sandbox.fromHost): nothing an agent left in it can colour what is read. */
export interface SandboxFromHost {
  /**
   * What differs, read from outside — no process in the sandbox runs, so nothing an agent
   * left there (a fake `tar`, an `/etc/ld.so.preload`) can colour it. With `reference` (an
   * untouched sandbox of the same image): exactly what differs from it, a path put back as it
   * was not listed. Without: every path the sandbox has written since it was made (put back
   * as it was or not). Undefined when this process cannot read the sandboxes' layers.
   */
  changes(reference?: Sandbox): Promise<FileSystemChange[] | undefined>;
  /**
   * The host file the engine bind-mounts at `path` in the sandbox (/etc/hostname,
   * /etc/hosts, /etc/resolv.conf), when this process can read and write it (a local engine,
   * run as root); undefined otherwise. Lets the host check and put back such a file without
   * a process in the sandbox.
   */
  fileOf(path: string): Promise<string | undefined>;
  /**
   * Makes the next process started in the sandbox get process id `pid` (or the first free
   * one above it), set from outside (the sandbox's own processes cannot), so that sandboxes
   * of one image hand out the same ids whatever ran in them before.
   * @returns false where this runtime or process cannot (a remote engine, not root, gVisor).
   */
  setNextPid(pid: number): Promise<boolean>;
}

/** A sandbox's written layer, archived on this host and laid over another (see Sandbox.writtenLayer). */
export interface WrittenLayer {
  /**
   * Archives every path the sandbox's own file system holds apart from its image's —
   * contents, types, modes, owners, times, links, FIFOs, extended attributes, deletions —
   * and the files the engine mounts at /etc, into `archivePath` on this host, the sandbox
   * frozen meanwhile (see SandboxRuntime.createFromLayer) unless `freeze` is false: the
   * caller knows that nothing in it writes meanwhile (no process there but the harness's
   * and idle shells).
   * @throws LayerArchiveRefusal when the layer holds what cannot be carried or passes `limits`.
   */
  archive(archivePath: string, limits: LayerLimits, freeze?: boolean): Promise<LayerArchive>;
  /**
   * Lays `layer` (another sandbox's of the same image, see archive) over this running one,
   * which must be as new (nothing written since it was made or restored): afterwards it
   * shows what a sandbox made from the layer would (SandboxRuntime.createFromLayer), without
   * a new sandbox. Needs a shell of ours in it (Sandbox.launchThrough).
   * @returns false, nothing changed, where it cannot (no such shell, no GNU tar in the image,
   *   a layer holding what only overlayfs's own attributes give); true when done.
   * @throws SandboxError when it failed part way: the sandbox is then not to be used.
   */
  apply(layer: LayerArchive): Promise<boolean>;
}

/** Shells of ours that outlive this process, handed to a later owner of the sandbox (see Sandbox.handOver). */
export interface ShellHandOver {
  /**
   * New pipes for a shell of ours to move to and wait on (see ShellSession.handOver),
   * recorded as `role` (a plain word; one record per role) with `note`, where only the host
   * sees them, so a later owner of the sandbox can {@link take} them.
   * @returns their path in the sandbox, without the `.in`/`.out`/`.ctl` ends.
   */
  pipes(role: string, note: string): Promise<string>;
  /** The process waiting on the pipes {@link pipes} recorded as `role`, with its note (undefined: none recorded). */
  take(role: string): Promise<{ process: AttachedProcess; note: string } | undefined>;
}

/**
 * A shell of the harness's own, already running in a sandbox, as the sandbox uses it to start
 * processes and copy archives in (see Sandbox.launchThrough; ShellSession is one). Declared
 * here, not taken from the shell, so that the sandbox contract names no client of its own.
 */
export interface HarnessShell {
  /** False once the shell died (killed, or respawning itself): it cannot run anything then. */
  readonly isAlive: boolean;
  /** Runs `script` in the shell; `definitions`: shell code it needs in place first, sent once per shell process. */
  run(script: string, options?: { timeoutMs?: number; definitions?: readonly string[] }): Promise<{ output: string; exitCode: number | null }>;
}

/**
 * What the user sets for every sandbox of a run, whatever the backend (`--runtime`,
 * `--disk-limit`): passed to the runtime that creates them, never read from the environment
 * below the CLI.
 */
export interface SandboxSettings {
  /**
   * Docker: the OCI runtime by its name in the engine's configuration (`runc`, `runsc` for
   * gVisor); Kubernetes: the name of a RuntimeClass (`runc`: the node's default). Undefined:
   * the engine's default.
   */
  ociRuntime?: string;
  /** Bytes each sandbox may write when its spec names no limit. Undefined: {@link DEFAULT_DISK_BYTES}. */
  diskLimitBytes?: number;
  /**
   * What a sandbox is on a Docker engine: `episode-roots`, a fresh root made per sandbox
   * inside a pool container (src/sandbox/roots; a local runc engine run as root); `containers`,
   * one engine container each; `auto`, episode roots where the engine supports them (see
   * episodeRootsUnsupported), else containers (the CLI's default). Undefined: containers.
   */
  kind?: SandboxKind;
}

export const SANDBOX_KINDS = ['auto', 'episode-roots', 'containers'] as const;
export type SandboxKind = (typeof SANDBOX_KINDS)[number];

export interface FileSystemChange {
  path: string;
  kind: 'modified' | 'added' | 'deleted';
}

export interface SandboxRuntime {
  /** Short name for logs and info, e.g. "docker". */
  readonly name: string;
  /**
   * What a command in its sandboxes sees besides the image's files — the OCI runtime and
   * what it shows of /proc and /sys — as a string: part of the key of a stored gold outcome
   * (`find /` lists them). Default: {@link name}.
   */
  readonly systemView?: string;
  /** The OCI runtime (Docker) or RuntimeClass (Kubernetes) its sandboxes run under (see SandboxSettings.ociRuntime); undefined: the engine's default. */
  readonly ociRuntime?: string;
  /**
   * True when every sandbox it creates is new by construction, at about the cost of a
   * restore (episode roots): a used one is then replaced, never restored in place.
   */
  readonly freshRoots?: boolean;
  /** Creates and starts a sandbox. Throws SandboxError SANDBOX_UNAVAILABLE on failure. */
  create(spec: SandboxSpec): Promise<Sandbox>;
  /**
   * Keeps `sandbox` (one of this runtime's, made from `sandbox.spec`, clean, nothing of ours
   * left running in it) running after this process lets go of it, for `ttlMs`, so a later
   * process of the same configuration can {@link adopt} it. Runtimes that cannot keep
   * sandboxes warm leave this out.
   * @returns false when it could not be kept (the caller removes it).
   */
  park?(sandbox: Sandbox, role: WarmRole, ttlMs: number): Promise<boolean>;
  /**
   * A sandbox of `spec` that an earlier process parked in role `role`, now this process's;
   * undefined when there is none. It may be in any state an agent can leave behind: clean it
   * before use.
   */
  adopt?(spec: SandboxSpec, role: WarmRole): Promise<Sandbox | undefined>;
  /**
   * Optional: a new sandbox of `spec` whose file system is, before anything runs in it, what
   * `layer` archived (see WrittenLayer.archive): only ctimes and inode numbers of the paths
   * it holds are new. Throws as {@link create}.
   */
  createFromLayer?(spec: SandboxSpec, layer: LayerArchive): Promise<Sandbox>;
}

/** Bounds on what {@link WrittenLayer.archive} copies. */
export interface LayerLimits {
  /** Bytes of regular files. */
  maxBytes: number;
  /** Paths. */
  maxPaths: number;
  /** Time the copy may take. */
  timeoutMs: number;
}

/** A sandbox's writable layer archived on this host (see WrittenLayer.archive). */
export interface LayerArchive {
  /** The archive's path on this host. */
  readonly path: string;
  /** Paths in the layer. */
  readonly paths: number;
  /** Bytes of its regular files. */
  readonly bytes: number;
  /** The archive's size. */
  readonly archiveBytes: number;
  /** Folders (paths in the layer) that grew past one block, with their size: made as large again (see extractLayer). */
  readonly grownFolders?: readonly { path: string; size: number }[];
  /** The files the engine mounts at /etc (hostname, hosts, resolv.conf), as they were. */
  readonly mountedFiles?: readonly { path: string; content: Buffer; mode: number; uid: number; gid: number }[];
}

/** What a parked sandbox serves as: a pool's workspace, or a restorer's pristine template. */
export type WarmRole = 'workspace' | 'template';

/**
 * argv[0] of the sandbox's own idle process (its init's first child; runtimes must start
 * it). Code that kills processes in a sandbox spares it by its pid, found by this name and
 * its place (idlePidScript): an agent's process can take the name, not the place.
 */
export const IDLE_PROCESS_NAME = 'intercode-idle';

/** Defaults that fit NL2Bash-style tasks. */
export const DEFAULT_LIMITS: ResourceLimits = {
  memoryBytes: 512 * 1024 * 1024,
  pids: 256,
  cpus: 1,
};

/** A sandbox's writable layer when its limits do not say (2 GiB). */
export const DEFAULT_DISK_BYTES = 2 * 1024 ** 3;

/** Enough for root to own, change and delete files and manage its own processes. */
export const DEFAULT_CAPABILITIES: readonly string[] = [
  'CHOWN',
  'DAC_OVERRIDE',
  'FOWNER',
  'FSETID',
  'KILL',
  'SETGID',
  'SETUID',
];
