import type Docker from 'dockerode';
import { randomBytes } from 'node:crypto';
import { accessSync, constants, openSync, renameSync, rmSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { Socket } from 'node:net';
import { join } from 'node:path';
import type { AttachedProcess, AttachOptions, HarnessShell } from '../types.js';
import { shellQuote } from '../shell/shell-script.js';
import { hostCommands } from './host-commands.js';

/**
 * The FIFOs of one process: stdin (`in`), merged stdout/stderr (`out`) and, on descriptor 4,
 * a control channel (`ctl`) for the harness's own reports (see ShellSession), which the
 * process's children never inherit. Paths on the host and in the sandbox.
 */
export interface FifoPair {
  host: Pipes;
  sandbox: Pipes;
}

export interface Pipes {
  in: string;
  out: string;
  ctl: string;
}

/** Starts a process in the sandbox, detached, its stdio on FIFOs of the channel. */
export interface Launcher {
  /**
   * Starts `argv` with stdin from `pipes.in`, stdout/stderr to `pipes.out` and descriptor 4
   * to `pipes.ctl` (sandbox paths of FIFOs that exist). Resolves once the start is under way
   * (the process may still be starting).
   */
  launch(argv: readonly string[], options: AttachOptions, pipes: Pipes): Promise<void>;
}

/** The shell line that starts `argv` on the pipes (it blocks in open() until we open our ends). */
const onPipes = (argv: readonly string[], pipes: Pipes) => ['/bin/sh', '-c', `exec "$@" < ${pipes.in} > ${pipes.out} 2>&1 4> ${pipes.ctl}`, 'sh', ...argv];

/** The engine starts the process (a detached exec). */
export function execLauncher(container: Docker.Container): Launcher {
  return {
    async launch(argv, options, pipes) {
      const exec = await container.exec({
        Cmd: onPipes(argv, pipes),
        AttachStdin: false,
        AttachStdout: false,
        AttachStderr: false,
        Tty: false,
        ...(options.workdir ? { WorkingDir: options.workdir } : {}),
        ...(options.env ? { Env: Object.entries(options.env).map(([k, v]) => `${k}=${v}`) } : {}),
      });
      // The engine answers a detached start on a stream of its own: drain it, or its socket stays open.
      const answer = (await exec.start({ Detach: true })) as unknown as { resume?: () => void } | undefined;
      answer?.resume?.();
    },
  };
}

/** Arguments longer than this go to the launching shell once, as variables (see {@link shellLauncher}). */
const LONG_ARGUMENT = 256;

/**
 * A shell of the harness's own already in the sandbox starts the process, in a process
 * group of its own and with none of the shell's descriptors: no engine round trip, no
 * runtime exec and no host process (each costs milliseconds of CPU), and the same limits,
 * since it is in the container. A long argument (a shell's script) is sent to the launching
 * shell once, as a variable, not with every start (see ShellRunOptions.definitions).
 */
export function shellLauncher(shell: HarnessShell): Launcher {
  const variables = new Map<string, { name: string; definition: string }>();
  const word = (arg: string): { text: string; definition?: string } => {
    if (arg.length <= LONG_ARGUMENT) return { text: shellQuote(arg) };
    let variable = variables.get(arg);
    if (!variable) {
      const name = `__ic_arg${variables.size}`;
      variable = { name, definition: `${name}=${shellQuote(arg)}` };
      variables.set(arg, variable);
    }
    return { text: `"$${variable.name}"`, definition: variable.definition };
  };
  return {
    async launch(argv, options, pipes) {
      const words = argv.map(word);
      // Assignments before the command and redirections done by the forked shell: no env, no sh.
      // Job control on for the start only: the process gets a process group of its own (so
      // its `kill 0` cannot reach this shell) without a setsid process (one exec fewer).
      const env = Object.entries(options.env ?? {}).map(([k, v]) => `${k}=${shellQuote(v)} `).join('');
      const start = `set -m; ${env}${words.map((w) => w.text).join(' ')} < ${pipes.in} > ${pipes.out} 2>&1 3>&- 4> ${pipes.ctl} & builtin disown; set +m`;
      const definitions = words.flatMap((w) => (w.definition ? [w.definition] : []));
      const result = await shell.run(`cd ${shellQuote(options.workdir ?? '/')} && { ${start}; }`, { timeoutMs: 10_000, definitions });
      if (result.exitCode !== 0) throw new Error(`launching ${argv.at(-1)} failed: ${result.output.slice(0, 500)}`);
    },
  };
}

/** Where a sandbox's channel directory appears inside it (read-only). */
export const CHANNEL_MOUNT = '/run/intercode';

/**
 * The host directory under which each sandbox gets its channel: INTERCODE_CHANNEL_DIR, else
 * a folder in /dev/shm (a tmpfs: making a FIFO there costs a fraction of what it costs on a
 * disk file system), else one in the temporary directory.
 */
export function channelRoot(): string {
  if (process.env.INTERCODE_CHANNEL_DIR) return process.env.INTERCODE_CHANNEL_DIR;
  try {
    accessSync('/dev/shm', constants.W_OK);
    return '/dev/shm/intercode-ts-channels';
  } catch {
    return join(tmpdir(), 'intercode-ts-channels');
  }
}

/**
 * FIFO pairs made per `mkfifo` process: a few first (a sandbox used for one episode needs
 * two pairs, for the control shell and the agent's), then many (a warm pool's sandbox
 * takes one per episode). A `mkfifo` process (run by the host command helper: see
 * HostCommands) costs far more to start than a FIFO costs to make, so FIFOs are made in batches.
 */
const FIFO_BATCHES = { first: 4, next: 64 };

const PIPE_ENDS = ['in', 'out', 'ctl'] as const;

/** Makes owner-only FIFOs at these host paths (Node has no mkfifo of its own). @throws when one cannot be made. */
export type FifoMaker = (paths: readonly string[]) => Promise<void>;

/** One `mkfifo` process on the host, through the host command helper. */
const mkfifoOnHost: FifoMaker = async (paths) => {
  const made = await hostCommands.run(['mkfifo', '-m', '600', ...paths], 60_000);
  if (made.status !== 0) throw new Error(`mkfifo ${paths[0] ?? ''}… failed (${made.status === null ? 'did not run' : `exit ${made.status}`}): ${made.output}`);
};

/**
 * A sandbox's private channel on the host, `dir`, holding
 * - `shared/`, mounted read-only in the sandbox at {@link CHANNEL_MOUNT}: the FIFOs of the
 *   processes being started, and archives to unpack. Nothing in the sandbox can write there
 *   (a FIFO on a read-only mount can still be opened for writing);
 * - `spare/`, which the sandbox never sees: FIFOs made ahead in batches (one `mkfifo`
 *   process each, see {@link FIFO_BATCHES}), each pair renamed into `shared/` when a process
 *   is started on it.
 */
export class FifoChannel {
  /** The host side of the directory the sandbox sees. */
  readonly shared: string;
  private readonly spareDir: string;
  private readonly spares: string[] = [];
  private making: Promise<void> | undefined;
  private batches = 0;

  private constructor(
    readonly dir: string,
    private readonly makeFifos: FifoMaker = mkfifoOnHost,
  ) {
    this.shared = join(dir, 'shared');
    this.spareDir = join(dir, 'spare');
  }

  /**
   * Makes a new, private channel directory on the host, `<pid>-<tag>`: named after this
   * process (see {@link channelOwner}) and the sandbox's tag (see warm-sandboxes.ts).
   * `makeFifos`: who makes its FIFOs (default: a `mkfifo` process on the host); `parent`: the
   * folder it is made in (default {@link channelRoot}).
   */
  static async create(tag: string = randomBytes(8).toString('hex'), makeFifos?: FifoMaker, parent = channelRoot()): Promise<FifoChannel> {
    const channel = new FifoChannel(join(parent, `${process.pid}-${tag}`), makeFifos);
    await mkdir(channel.shared, { recursive: true, mode: 0o700 });
    await mkdir(channel.spareDir, { mode: 0o700 });
    return channel;
  }

  /**
   * The channel in `dir`, made by another process (an adopted sandbox's), with the spare
   * FIFOs it left (the sandbox never saw them: see {@link parkWith}); an incomplete pair is removed.
   */
  static async takeOver(dir: string): Promise<FifoChannel> {
    const channel = new FifoChannel(dir);
    const ends = new Map<string, number>();
    for (const file of await readdir(channel.spareDir).catch(() => [] as string[])) {
      const dot = file.lastIndexOf('.');
      ends.set(file.slice(0, dot), (ends.get(file.slice(0, dot)) ?? 0) + 1);
    }
    for (const [name, count] of ends) {
      if (count === PIPE_ENDS.length && /^[0-9a-f]+-\d+$/.test(name)) channel.spares.push(name);
      else await Promise.all(PIPE_ENDS.map((end) => rm(join(channel.spareDir, `${name}.${end}`), { force: true })));
    }
    await mkdir(channel.spareDir, { recursive: true, mode: 0o700 });
    channel.batches = 1;
    return channel;
  }

  /**
   * Moves the channel directory to `dir` (a sandbox being parked), with a batch of spare
   * FIFOs made first for whoever adopts it (made now, at the end of a command, not at the
   * start of the next). The sandbox's bind mount follows the directory, whatever its name.
   */
  async parkWith(dir: string): Promise<FifoChannel> {
    if (this.spares.length < FIFO_BATCHES.next) {
      this.batches = Math.max(this.batches, 1);
      await (this.making ?? this.makeSpares());
    }
    await rename(this.dir, dir);
    return new FifoChannel(dir, this.makeFifos);
  }

  /** Moves the channel directory back to `dir` (a parking that failed). */
  async moveTo(dir: string): Promise<FifoChannel> {
    await rename(this.dir, dir);
    return new FifoChannel(dir, this.makeFifos);
  }

  /** A pair of new FIFOs in `shared/`, under a name never used before (nor seen by the sandbox while it was spare). */
  async takePipes(): Promise<FifoPair> {
    while (this.spares.length === 0) {
      this.making ??= this.makeSpares().finally(() => (this.making = undefined));
      await this.making;
    }
    const name = this.spares.pop()!;
    const pair = this.pipes(name);
    for (const end of PIPE_ENDS) renameSync(join(this.spareDir, `${name}.${end}`), pair.host[end]);
    return pair;
  }

  private pipes(name: string): FifoPair {
    return {
      host: { in: join(this.shared, `${name}.in`), out: join(this.shared, `${name}.out`), ctl: join(this.shared, `${name}.ctl`) },
      sandbox: { in: `${CHANNEL_MOUNT}/${name}.in`, out: `${CHANNEL_MOUNT}/${name}.out`, ctl: `${CHANNEL_MOUNT}/${name}.ctl` },
    };
  }

  /**
   * Where the name of the pipes a shell was handed over on as `role` is kept: in the
   * channel directory, which the sandbox does not see.
   * @throws RangeError for a role that is not a plain word (it becomes a file name).
   */
  private handOverRecord(role: string): string {
    if (!/^[a-z0-9-]{1,40}$/.test(role)) throw new RangeError(`hand-over role "${role}": lower-case letters, digits and - only`);
    return join(this.dir, `handover-${role}`);
  }

  /**
   * New pipes for a shell to be handed over on as `role`, recorded with `note` (a word of
   * the caller's) for whoever owns the channel next; a record of the same role is replaced.
   * @returns their path in the sandbox, without the ends' suffixes.
   */
  async handOverPipes(role: string, note: string): Promise<string> {
    const file = this.handOverRecord(role);
    const pair = await this.takePipes();
    const name = pair.host.in.slice(this.shared.length + 1, -'.in'.length);
    await writeFile(file, `${name} ${note}`, { mode: 0o600 });
    return pair.sandbox.in.slice(0, -'.in'.length);
  }

  /** The pipes {@link handOverPipes} recorded as `role`, and its note (the record is removed); undefined when there are none. */
  async takeHandedOver(role: string): Promise<{ pipes: Pipes; note: string } | undefined> {
    const file = this.handOverRecord(role);
    const record = await readFile(file, 'utf8').catch(() => undefined);
    if (record === undefined) return undefined;
    await rm(file, { force: true });
    const [name = '', note = ''] = record.split(' ');
    return /^[0-9a-f]+-\d+$/.test(name) ? { pipes: this.pipes(name).host, note } : undefined;
  }

  private async makeSpares(): Promise<void> {
    const count = this.batches++ === 0 ? FIFO_BATCHES.first : FIFO_BATCHES.next;
    const batch = randomBytes(6).toString('hex');
    const names = Array.from({ length: count }, (_, i) => `${batch}-${i}`);
    await this.makeFifos(names.flatMap((n) => PIPE_ENDS.map((end) => join(this.spareDir, `${n}.${end}`))));
    this.spares.push(...names);
  }

  async remove(): Promise<void> {
    await removeChannelDir(this.dir);
  }
}

/** The process that made the channel directory `name` (undefined for a name of another form). */
export function channelOwner(name: string): number | undefined {
  const match = /^(\d+)-[0-9a-f]+$/.exec(name);
  return match ? Number(match[1]) : undefined;
}

export async function removeChannelDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

/**
 * A process in a sandbox whose stdin and stdout are a pair of named pipes in a directory
 * shared with the host, instead of a stream relayed by the Docker daemon. The daemon (or a
 * shell of ours) only starts the process, which runs with the container's limits,
 * capabilities and namespaces; every byte after that moves through the kernel, straight
 * between this process and the sandbox: no daemon, no container shim, no relay process.
 *
 * Both FIFOs are opened without blocking: the input one read-write (Linux lets a FIFO be
 * opened so without a reader; we never read from it), the output one read-only. The
 * kernel reports hang-up on the output side only after a writer has come and gone, so the
 * stream ends exactly when the last writer in the sandbox closes it (the shell and any
 * children it left holding stdout).
 */
export class FifoProcess implements AttachedProcess {
  readonly hasControlChannel = true;

  private constructor(
    private readonly input: Socket,
    private readonly output: Socket,
    private readonly control: Socket,
    private names: readonly string[],
  ) {}

  /**
   * Once the sandbox side has every end open the names are no longer needed. Synchronous
   * (unlinks), so they are gone before anyone sees the process's first output. Once only.
   */
  private unlinkNames(): void {
    for (const name of this.names) rmSync(name, { force: true });
    this.names = [];
  }

  /**
   * Starts `argv` in the container with stdin/stdout (and stderr) on a new pair of `channel`'s
   * FIFOs, and descriptor 4 on a third, the control channel.
   * @throws whatever starting the process throws (the caller maps it to a SandboxError).
   */
  static async start(launcher: Launcher, channel: FifoChannel, argv: readonly string[], options: AttachOptions): Promise<FifoProcess> {
    const pipes = await channel.takePipes();
    try {
      await launcher.launch(argv, options, pipes.sandbox);
    } catch (error) {
      for (const path of Object.values(pipes.host)) rmSync(path, { force: true });
      throw error;
    }
    return FifoProcess.open(pipes.host);
  }

  /**
   * The process of the sandbox on `pipes` (host paths), started or waiting there already.
   * @throws when a FIFO cannot be opened (they are removed).
   */
  static open(pipes: Pipes): FifoProcess {
    const names = [pipes.in, pipes.out, pipes.ctl];
    try {
      const input = new Socket({ fd: openSync(pipes.in, constants.O_RDWR | constants.O_NONBLOCK), readable: false, writable: true });
      const output = new Socket({ fd: openSync(pipes.out, constants.O_RDONLY | constants.O_NONBLOCK), readable: true, writable: false });
      const control = new Socket({ fd: openSync(pipes.ctl, constants.O_RDONLY | constants.O_NONBLOCK), readable: true, writable: false });
      return new FifoProcess(input, output, control, names);
    } catch (error) {
      for (const path of names) rmSync(path, { force: true });
      throw error;
    }
  }

  write(data: string): void {
    if (!this.input.destroyed && this.input.writable) this.input.write(data);
  }

  listen(handlers: { output(chunk: Buffer): void; control?(chunk: Buffer): void; exit(): void }): void {
    let exited = false;
    const exit = () => {
      if (exited) return;
      exited = true;
      this.input.destroy();
      handlers.exit();
    };
    this.input.on('error', () => undefined);
    this.output.on('error', exit);
    this.control.on('error', exit);
    // Any byte comes after the process opened all three ends (its redirections come first).
    this.control.once('data', () => this.unlinkNames());
    this.output.once('data', () => this.unlinkNames());
    this.output.on('data', (chunk: Buffer) => handlers.output(chunk));
    this.control.on('data', (chunk: Buffer) => (handlers.control ?? handlers.output)(chunk));
    this.output.once('end', exit);
    this.output.once('close', exit);
    // Only the process itself holds the control channel (its children do not inherit it):
    // its end is the process's end even while children still hold stdout.
    this.control.once('end', exit);
    this.control.once('close', exit);
    // A process that wrote nothing and ended before anyone listened (an exec of `true`, answered
    // after it exited) left streams that ended unread: their events went before these handlers.
    // Checked once what was buffered has flowed.
    setImmediate(() => {
      if ([this.output, this.control].some((stream) => stream.readableEnded || stream.destroyed)) exit();
    });
  }

  close(): void {
    this.input.destroy();
    this.output.destroy();
    this.control.destroy();
    this.unlinkNames();
  }
}
