import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2';
import { SandboxError } from '../../../src/errors.js';
import { packEntries } from '../../../src/images/tar.js';
import { DEFAULT_CAPABILITIES, type Sandbox, type SandboxRuntime } from '../../../src/sandbox/types.js';
import { SOCKET_DIR_IN_SANDBOX, SOCKET_NAME } from '../images.js';

/** What agent sessions may do (load-dumps.sh's roles): `ro` reads every loaded database, `rw` may change them. */
export type Account = 'ro' | 'rw';

const ROLE: Record<Account, string> = { ro: 'intercode_reader', rw: 'intercode_writer' };

/** An account the harness made for one connection: nobody else knows its password, and it is dropped with the connection. */
export interface SessionAccount {
  user: string;
  password: string;
}

export interface MariaDbServerOptions {
  runtime: SandboxRuntime;
  /** An image from {@link sqlDataRecipe}. */
  image: string;
  /** What the sessions' accounts may do. */
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

/** The names {@link MariaDbServer.openAccount} gives agent accounts. */
const AGENT_USER = /^ic_[0-9a-f]{16}$/;
/** The harness's account, for the client tools run inside the sandbox. */
const ADMIN_ARGS = '--user=intercode_admin --password=intercode_admin';
/** The databases the agents' roles reach (load-dumps.sh grants them every one but these). */
const AGENT_DATABASES = "SELECT schema_name FROM information_schema.schemata WHERE schema_name NOT IN ('mysql','information_schema','performance_schema','sys')";

/**
 * One MariaDB server in a sandbox with no network: clients reach it through a Unix socket
 * in a host directory mounted into the sandbox. Sessions are mysql2 connections, each on an
 * account of its own ({@link MariaDbServer.openAccount}) that the harness makes and drops
 * through its control connection (`intercode_admin`, which no agent connection can reach:
 * a session sees and kills only its own account's threads).
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
        this.control = await this.connectAs({ user: 'intercode_admin', password: 'intercode_admin' }, true);
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

  /**
   * A new account for one connection, with the server's role (its default, so no statement
   * is needed after connecting). @throws the driver's error when the server refuses.
   * @param user its name (a restored session's agent keeps the saved one's: see PrivateServerSession.saveState); default: a new random one.
   */
  async openAccount(user?: string): Promise<SessionAccount> {
    if (user !== undefined && !AGENT_USER.test(user)) throw new Error(`not an agent account name: ${user}`);
    const account = { user: user ?? `ic_${randomBytes(8).toString('hex')}`, password: randomBytes(16).toString('hex') };
    const name = `'${account.user}'@'localhost'`;
    await this.controlQuery(
      `CREATE USER ${name} IDENTIFIED BY '${account.password}'; GRANT ${ROLE[this.account]} TO ${name}; SET DEFAULT ROLE ${ROLE[this.account]} FOR ${name}`,
    );
    return account;
  }

  /** Ends `threadId`'s connection (when given) and drops its account; never throws (a server that is gone drops everything). */
  async dropAccount(account: SessionAccount, threadId?: number): Promise<void> {
    if (threadId !== undefined) await this.controlQuery(`KILL CONNECTION ${Number(threadId)}`).catch(() => undefined);
    await this.controlQuery(`DROP USER IF EXISTS '${account.user}'@'localhost'`).catch(() => undefined);
  }

  /** A new connection as `account`. @throws the driver's error when the server refuses. */
  connect(account: SessionAccount): Promise<mysql.Connection> {
    return this.connectAs(account, false);
  }

  private connectAs(account: SessionAccount, multipleStatements: boolean): Promise<mysql.Connection> {
    return new Promise((resolve, reject) => {
      const connection = mysql.createConnection({
        socketPath: this.socketPath,
        user: account.user,
        password: account.password,
        multipleStatements,
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

  /** Whether the server still answers its control connection. */
  async answers(): Promise<boolean> {
    return this.controlQuery('SELECT 1').then(
      () => true,
      () => false,
    );
  }

  private controlQuery(sql: string): Promise<void> {
    const control = this.control;
    if (!control) return Promise.reject(new SandboxError('SANDBOX_LOST', 'The SQL server was stopped'));
    return new Promise((resolve, reject) => control.query(sql, (error) => (error ? reject(error) : resolve())));
  }

  /** Stops the statement a connection is running (KILL QUERY, from the control connection). */
  killQuery(threadId: number): void {
    this.control?.query(`KILL QUERY ${Number(threadId)}`, () => undefined);
  }

  /** Ends a connection (KILL CONNECTION, from the control connection). */
  killConnection(threadId: number): void {
    this.control?.query(`KILL CONNECTION ${Number(threadId)}`, () => undefined);
  }

  /**
   * A logical dump of every database the agents' roles reach (not `mysql` nor the server's
   * own schemas), made by `mariadb-dump` inside the sandbox: schemas (with AUTO_INCREMENT
   * counters), rows, views, triggers, routines and events. The caller has made sure no agent
   * connection holds a lock or a transaction (a dump waits for neither).
   * @returns null when the dump passes `maxBytes`.
   * @throws SandboxError when the dump fails (the server is gone).
   */
  async dump(maxBytes: number): Promise<Buffer | null> {
    const result = await this.sandbox.exec(
      [
        'sh',
        '-c',
        `mariadb-dump ${ADMIN_ARGS} --default-character-set=utf8mb4 --hex-blob --routines --events --triggers --skip-dump-date --skip-comments --skip-lock-tables --add-drop-database --databases $(mariadb ${ADMIN_ARGS} --batch --skip-column-names -e "${AGENT_DATABASES}") 2>/tmp/intercode-dump.err || { cat /tmp/intercode-dump.err >&2; exit 1; }`,
      ],
      { maxOutputBytes: maxBytes + 1 },
    );
    if (result.outputLimited || result.output.length > maxBytes) return null;
    if (result.exitCode !== 0) throw new SandboxError('SANDBOX_LOST', `mariadb-dump failed in ${this.sandbox.id.slice(0, 12)}: ${result.output.toString('utf8').slice(-500)}`);
    return result.output;
  }

  /**
   * Replaces this server's agent databases by a {@link MariaDbServer.dump}'s, and computes
   * their table statistics as the image's loader did (ties in sorts break the same way).
   * @throws SandboxError when the server does not take it.
   */
  async load(dump: Uint8Array): Promise<void> {
    const file = 'intercode-checkpoint.sql';
    await this.sandbox.putArchive(await packEntries([{ name: file, type: 'file', content: Buffer.from(dump), mode: 0o644 }]), '/tmp');
    const result = await this.sandbox.exec([
      'sh',
      '-c',
      `mariadb ${ADMIN_ARGS} --default-character-set=utf8mb4 </tmp/${file} && rm /tmp/${file} && mariadb-check ${ADMIN_ARGS} --analyze --silent --databases $(mariadb ${ADMIN_ARGS} --batch --skip-column-names -e "${AGENT_DATABASES}")`,
    ]);
    if (result.exitCode !== 0) throw new SandboxError('SANDBOX_LOST', `the checkpoint's dump did not load in ${this.sandbox.id.slice(0, 12)}: ${result.output.toString('utf8').slice(-500)}`);
  }

  async stop(): Promise<void> {
    this.control?.destroy();
    this.control = undefined;
    await this.sandbox.destroy().catch(() => undefined);
    await rm(this.socketDir, { recursive: true, force: true });
  }
}
