import type { SandboxRuntime } from '../../../src/sandbox/types.js';
import type { ExecuteLimits, QueryOutcome, SqlBackend, SqlSession } from '../backend.js';
import { MariaDbServer } from './server.js';
import { MariaDbSession } from './session.js';

export interface ServerBackendOptions {
  runtime: SandboxRuntime;
  image: string;
}

/**
 * Read-only mode: one server for every env; each session's connections have accounts of
 * their own with the reader role, so no episode can change what another reads, see its
 * statements, or end its connections.
 */
export class SharedServerBackend implements SqlBackend {
  readonly dataFixed = true;

  private constructor(
    private readonly server: MariaDbServer,
    readonly identity: string,
  ) {}

  static async start(options: ServerBackendOptions): Promise<SharedServerBackend> {
    return new SharedServerBackend(await MariaDbServer.start({ ...options, account: 'ro' }), options.image);
  }

  sandboxIds(): readonly string[] {
    return [this.server.id];
  }

  openSession(): Promise<SqlSession> {
    return MariaDbSession.open(this.server);
  }

  close(): Promise<void> {
    return this.server.stop();
  }
}

/**
 * Writable mode: every session has a server of its own (the account may change anything
 * in the loaded databases). When an episode may have changed something, the next reset
 * throws that server away and moves to a spare started in the background.
 */
export class PrivateServerBackend implements SqlBackend {
  readonly dataFixed = false;
  private readonly sessions = new Set<PrivateServerSession>();

  constructor(private readonly options: ServerBackendOptions) {}

  get identity(): string {
    return `${this.options.image} (writable)`;
  }

  sandboxIds(): readonly string[] {
    return [...this.sessions].flatMap((s) => s.serverId ?? []);
  }

  async openSession(): Promise<SqlSession> {
    const session = new PrivateServerSession(() => MariaDbServer.start({ ...this.options, account: 'rw' }));
    this.sessions.add(session);
    return session;
  }

  async close(): Promise<void> {
    await Promise.all([...this.sessions].map((s) => s.close()));
    this.sessions.clear();
  }
}

class PrivateServerSession implements SqlSession {
  private current: { server: MariaDbServer; session: MariaDbSession } | undefined;
  private spare: Promise<MariaDbServer> | undefined;

  constructor(private readonly startServer: () => Promise<MariaDbServer>) {}

  get serverId(): string | undefined {
    return this.current?.server.id;
  }

  private takeSpare(): Promise<MariaDbServer> {
    const server = this.spare ?? this.startServer();
    this.spare = this.startServer();
    this.spare.catch(() => undefined);
    return server;
  }

  async useDatabase(database: string, fresh: boolean): Promise<void> {
    if (!this.current || fresh) {
      const old = this.current;
      this.current = undefined;
      const oldStopped = old ? old.session.close().catch(() => undefined).then(() => old.server.stop()) : Promise.resolve();
      const server = await this.takeSpare();
      this.current = { server, session: await MariaDbSession.open(server) };
      await oldStopped;
    }
    await this.current.session.useDatabase(database, false);
  }

  private active(): MariaDbSession {
    if (!this.current) throw new Error('PrivateServerSession used before useDatabase()');
    return this.current.session;
  }

  execute(sql: string, limits: ExecuteLimits): Promise<QueryOutcome> {
    return this.active().execute(sql, limits);
  }

  verify(sql: string, limits: ExecuteLimits): Promise<QueryOutcome> {
    return this.active().verify(sql, limits);
  }

  schema(database: string): Promise<{ table: string; columns: string[] }[]> {
    return this.active().schema(database);
  }

  async close(): Promise<void> {
    const current = this.current;
    this.current = undefined;
    const spare = this.spare;
    this.spare = undefined;
    await Promise.all([
      current ? current.session.close().catch(() => undefined).then(() => current.server.stop()) : undefined,
      spare?.then((s) => s.stop()).catch(() => undefined),
    ]);
  }
}
