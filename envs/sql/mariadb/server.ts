import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2';
import { SandboxError } from '../../../src/errors.js';
import { DEFAULT_CAPABILITIES, type Sandbox, type SandboxRuntime } from '../../../src/sandbox/types.js';
import { SOCKET_DIR_IN_SANDBOX, SOCKET_NAME } from '../images.js';

/** The accounts load-dumps.sh creates: `ro` reads every loaded database, `rw` may change them. */
export type Account = 'ro' | 'rw';

export interface MariaDbServerOptions {
  runtime: SandboxRuntime;
  /** An image from {@link sqlDataRecipe}. */
  image: string;
  /** The account sessions use; the server's own control connection (KILL QUERY) uses it too. */
  account: Account;
  /** How long the server may take to accept connections. */
  startTimeoutMs?: number;
}

/**
 * Connection options under which rows convert exactly (see convert.ts), without mysql2's
 * IGNORE_SPACE client flag: InterCode's driver did not set it (so `COUNT (*)` is a syntax
 * error, as on its server), and a session reset drops it anyway, so with it the same
 * statement parsed differently before and after a reset.
 */
const ROW_OPTIONS = { dateStrings: true, supportBigNumbers: true, bigNumberStrings: true, decimalNumbers: false, flags: ['-IGNORE_SPACE'] };

/**
 * One MariaDB server in a sandbox with no network: clients reach it through a Unix socket
 * in a host directory mounted into the sandbox. Sessions are mysql2 connections.
 */
export class MariaDbServer {
  private control: mysql.Connection | undefined;

  private constructor(
    private readonly sandbox: Sandbox,
    private readonly socketDir: string,
    readonly account: Account,
  ) {}

  get socketPath(): string {
    return join(this.socketDir, SOCKET_NAME);
  }

  get id(): string {
    return this.sandbox.id;
  }

  /**
   * Starts a server from `image` and waits until it accepts connections.
   * @throws SandboxError SANDBOX_UNAVAILABLE when it does not within the time limit.
   */
  static async start(options: MariaDbServerOptions): Promise<MariaDbServer> {
    const socketDir = await mkdtemp(join(tmpdir(), 'intercode-sql-'));
    await chmod(socketDir, 0o777);
    let sandbox: Sandbox | undefined;
    try {
      sandbox = await options.runtime.create({
        image: options.image,
        hostname: 'intercode-sql',
        limits: { memoryBytes: 2 * 1024 ** 3, pids: 1024, cpus: 2 },
        capabilities: DEFAULT_CAPABILITIES,
        mounts: [{ hostPath: socketDir, containerPath: SOCKET_DIR_IN_SANDBOX }],
        command: ['mariadbd', '--user=mysql'],
      });
      const server = new MariaDbServer(sandbox, socketDir, options.account);
      await server.waitReady(options.startTimeoutMs ?? 60_000);
      return server;
    } catch (error) {
      await sandbox?.destroy().catch(() => undefined);
      await rm(socketDir, { recursive: true, force: true });
      throw error;
    }
  }

  private async waitReady(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last: unknown;
    while (Date.now() < deadline) {
      try {
        this.control = await this.connect(this.account);
        return;
      } catch (error) {
        last = error;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    throw new SandboxError('SANDBOX_UNAVAILABLE', `The SQL server in ${this.sandbox.id.slice(0, 12)} did not accept connections within ${timeoutMs} ms`, {
      details: { sandbox: this.sandbox.id },
      cause: last,
    });
  }

  /** A new connection as `account` (default: the server's). @throws the driver's error when the server refuses. */
  connect(account: Account = this.account): Promise<mysql.Connection> {
    return new Promise((resolve, reject) => {
      const connection = mysql.createConnection({
        socketPath: this.socketPath,
        user: `intercode_${account}`,
        password: `intercode_${account}`,
        ...ROW_OPTIONS,
      });
      connection.once('connect', () => {
        connection.removeListener('error', reject);
        // Errors after this point come back through each query; a dropped connection is noticed there.
        connection.on('error', () => undefined);
        resolve(connection);
      });
      connection.once('error', reject);
    });
  }

  /** Stops the statement a connection is running (KILL QUERY, from a connection of the same account). */
  killQuery(threadId: number): void {
    this.control?.query(`KILL QUERY ${Number(threadId)}`, () => undefined);
  }

  async stop(): Promise<void> {
    this.control?.destroy();
    this.control = undefined;
    await this.sandbox.destroy().catch(() => undefined);
    await rm(this.socketDir, { recursive: true, force: true });
  }
}
