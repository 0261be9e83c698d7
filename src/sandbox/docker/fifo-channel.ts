import type Docker from 'dockerode';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants, openSync, rmSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ShellSession } from '../shell/shell-session.js';
import type { AttachedProcess, AttachOptions } from '../types.js';
import { shellQuote } from '../shell/shell-script.js';

const execFileAsync = promisify(execFile);

/** Starts a process in the sandbox, detached, its stdio on FIFOs in the channel directory. */
export interface Launcher {
  /**
   * Starts `argv` with stdin from `pipes.in` and stdout/stderr to `pipes.out` (container
   * paths). Resolves once both FIFOs exist (the process may still be starting).
   */
  launch(argv: readonly string[], options: AttachOptions, pipes: { in: string; out: string }, hostPipes: { in: string; out: string }): Promise<void>;
}

/** The shell line that starts `argv` on the pipes (it blocks in open() until we open our ends). */
const onPipes = (argv: readonly string[], pipes: { in: string; out: string }) => ['/bin/sh', '-c', `exec "$@" < ${pipes.in} > ${pipes.out} 2>&1`, 'sh', ...argv];

/** The engine starts the process (a detached exec); the FIFOs are made on the host first. */
export function execLauncher(container: Docker.Container): Launcher {
  return {
    async launch(argv, options, pipes, hostPipes) {
      await execFileAsync('mkfifo', ['-m', '600', hostPipes.in, hostPipes.out]);
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

/**
 * A shell of the harness's own already in the sandbox makes the FIFOs and starts the
 * process, in a process group of its own and with none of the shell's descriptors: no engine
 * round trip, no runtime exec and no host process (each costs milliseconds of CPU), and the
 * same limits, since it is in the container.
 */
export function shellLauncher(shell: ShellSession): Launcher {
  return {
    async launch(argv, options, pipes) {
      // Assignments before the command and redirections done by the forked shell: no env, no sh.
      // Job control on for the start only: the process gets a process group of its own (so
      // its `kill 0` cannot reach this shell) without a setsid process (one exec fewer).
      const env = Object.entries(options.env ?? {}).map(([k, v]) => `${k}=${shellQuote(v)} `).join('');
      const start = `set -m; ${env}${argv.map(shellQuote).join(' ')} < ${pipes.in} > ${pipes.out} 2>&1 3>&- 4>&- & builtin disown; set +m`;
      // The FIFOs exist when this returns; only the cd and the start run in the background.
      const command = `mkfifo -m 600 ${shellQuote(pipes.in)} ${shellQuote(pipes.out)} && { cd ${shellQuote(options.workdir ?? '/')} && ${start}; }`;
      const result = await shell.run(command, { timeoutMs: 10_000 });
      if (result.exitCode !== 0) throw new Error(`launching ${argv.at(-1)} failed: ${result.output.slice(0, 500)}`);
    },
  };
}

/** Where a sandbox's channel directory appears inside it. */
export const CHANNEL_MOUNT = '/run/intercode';

/** The host directory under which each sandbox gets its channel directory. */
export function channelRoot(): string {
  return process.env.INTERCODE_CHANNEL_DIR ?? join(tmpdir(), 'intercode-ts-channels');
}

/** Makes a new, private channel directory on the host. @returns its path. */
export async function makeChannelDir(): Promise<string> {
  const dir = join(channelRoot(), randomBytes(8).toString('hex'));
  await mkdir(dir, { recursive: true, mode: 0o700 });
  return dir;
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
  private constructor(
    private readonly input: Socket,
    private readonly output: Socket,
    private readonly names: readonly string[],
  ) {}

  /**
   * Once the sandbox side has both ends open the names are no longer needed. Synchronous
   * (two unlinks), so they are gone before anyone sees the process's first output.
   */
  private unlinkNames(): void {
    for (const name of this.names) rmSync(name, { force: true });
  }

  /**
   * Starts `argv` in the container with stdin/stdout (and stderr) on new FIFOs in `hostDir`.
   * @throws whatever starting the process throws (the caller maps it to a SandboxError).
   */
  static async start(launcher: Launcher, hostDir: string, argv: readonly string[], options: AttachOptions): Promise<FifoProcess> {
    const name = randomBytes(6).toString('hex');
    const hostPipes = { in: join(hostDir, `${name}.in`), out: join(hostDir, `${name}.out`) };
    const names = [hostPipes.in, hostPipes.out];
    try {
      await launcher.launch(argv, options, { in: `${CHANNEL_MOUNT}/${name}.in`, out: `${CHANNEL_MOUNT}/${name}.out` }, hostPipes);
      const input = new Socket({ fd: openSync(hostPipes.in, constants.O_RDWR | constants.O_NONBLOCK), readable: false, writable: true });
      const output = new Socket({ fd: openSync(hostPipes.out, constants.O_RDONLY | constants.O_NONBLOCK), readable: true, writable: false });
      return new FifoProcess(input, output, names);
    } catch (error) {
      for (const path of names) rmSync(path, { force: true });
      throw error;
    }
  }

  write(data: string): void {
    if (!this.input.destroyed && this.input.writable) this.input.write(data);
  }

  listen(handlers: { output(chunk: Buffer): void; exit(): void }): void {
    let exited = false;
    const exit = () => {
      if (exited) return;
      exited = true;
      this.input.destroy();
      handlers.exit();
    };
    this.input.on('error', () => undefined);
    this.output.on('error', exit);
    this.output.once('data', () => this.unlinkNames());
    this.output.on('data', (chunk: Buffer) => handlers.output(chunk));
    this.output.once('end', exit);
    this.output.once('close', exit);
  }

  close(): void {
    this.input.destroy();
    this.output.destroy();
    this.unlinkNames();
  }
}
