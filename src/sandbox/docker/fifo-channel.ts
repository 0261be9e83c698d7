import type Docker from 'dockerode';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ShellSession } from '../shell/shell-session.js';
import type { AttachedProcess, AttachOptions } from '../types.js';

const execFileAsync = promisify(execFile);

/** Starts `argv` in the sandbox, detached (its stdio is the FIFOs named in argv). */
export type Launcher = (argv: readonly string[], options: AttachOptions) => Promise<void>;

/** The engine starts the process: a detached exec. */
export function execLauncher(container: Docker.Container): Launcher {
  return async (argv, options) => {
    const exec = await container.exec({
      Cmd: [...argv],
      AttachStdin: false,
      AttachStdout: false,
      AttachStderr: false,
      Tty: false,
      ...(options.workdir ? { WorkingDir: options.workdir } : {}),
      ...(options.env ? { Env: Object.entries(options.env).map(([k, v]) => `${k}=${v}`) } : {}),
    });
    await exec.start({ Detach: true });
  };
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * A shell of the harness's own already in the sandbox starts the process, in a session of
 * its own and with none of the shell's descriptors: no engine round trip and no runtime
 * exec (tens of milliseconds of CPU each), and the same limits, since it is in the container.
 */
export function shellLauncher(shell: ShellSession): Launcher {
  return async (argv, options) => {
    const env = Object.entries(options.env ?? {}).map(([k, v]) => `${k}=${quote(v)}`);
    const command = `cd ${quote(options.workdir ?? '/')} && ${env.length ? `env ${env.join(' ')} ` : ''}setsid ${argv.map(quote).join(' ')} 3>&- 4>&- & builtin disown`;
    const result = await shell.run(command, { timeoutMs: 10_000 });
    if (result.exitCode !== 0) throw new Error(`launching ${argv.at(-1)} failed: ${result.output.slice(0, 500)}`);
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
 * shared with the host, instead of a stream relayed by the Docker daemon. The daemon only
 * starts the process (a detached exec, so it runs with the container's limits,
 * capabilities and namespaces); every byte after that moves through the kernel, which
 * takes the daemon and the container shim off each step's path (about 250 µs of CPU per
 * round trip on the machines we measured).
 *
 * Two `cat` relays on the host turn the pipes into ordinary child-process streams: they
 * open the FIFOs with blocking semantics, so the output side ends exactly when the last
 * writer in the sandbox closes it (the shell and any children it left holding stdout).
 */
export class FifoProcess implements AttachedProcess {
  private constructor(
    private readonly writer: ChildProcess,
    private readonly reader: ChildProcess,
    private readonly names: readonly string[],
  ) {}

  /**
   * Once both ends are open the names are no longer needed. Synchronous (two unlinks), so
   * they are gone before anyone sees the process's first output.
   */
  private unlinkNames(): void {
    for (const name of this.names) rmSync(name, { force: true });
  }

  /**
   * Starts `argv` in the container with stdin/stdout (and stderr) on new FIFOs in `hostDir`.
   * @throws whatever starting the exec throws (the caller maps it to a SandboxError).
   */
  static async start(launch: Launcher, hostDir: string, argv: readonly string[], options: AttachOptions): Promise<FifoProcess> {
    const name = randomBytes(6).toString('hex');
    const [inHost, outHost] = [join(hostDir, `${name}.in`), join(hostDir, `${name}.out`)];
    await execFileAsync('mkfifo', ['-m', '600', inHost, outHost]);
    const writer = spawn('/bin/sh', ['-c', 'exec cat > "$1"', 'sh', inHost], { stdio: ['pipe', 'ignore', 'ignore'] });
    const reader = spawn('cat', [outHost], { stdio: ['ignore', 'pipe', 'ignore'] });
    const relay = new FifoProcess(writer, reader, [inHost, outHost]);
    try {
      await launch(['/bin/sh', '-c', `exec "$@" < ${CHANNEL_MOUNT}/${name}.in > ${CHANNEL_MOUNT}/${name}.out 2>&1`, 'sh', ...argv], options);
    } catch (error) {
      relay.close();
      relay.unlinkNames();
      throw error;
    }
    return relay;
  }

  write(data: string): void {
    const stdin = this.writer.stdin!;
    if (!stdin.destroyed && stdin.writable) stdin.write(data);
  }

  listen(handlers: { output(chunk: Buffer): void; exit(): void }): void {
    let exited = false;
    const exit = () => {
      if (exited) return;
      exited = true;
      this.writer.kill('SIGKILL');
      handlers.exit();
    };
    this.writer.stdin!.on('error', () => undefined);
    this.reader.stdout!.once('data', () => this.unlinkNames());
    this.reader.stdout!.on('data', (chunk: Buffer) => handlers.output(chunk));
    this.reader.stdout!.once('close', exit);
  }

  close(): void {
    this.writer.kill('SIGKILL');
    this.reader.kill('SIGKILL');
  }
}
