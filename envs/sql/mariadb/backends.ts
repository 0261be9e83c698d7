import type { SandboxRuntime } from '../../../src/sandbox/types.js';
import { CheckpointError } from '../../../src/errors.js';
import type { ExecuteLimits, QueryOutcome, SqlBackend, SqlSession, SqlSessionState } from '../backend.js';
import { MariaDbServer } from './server.js';
import { MariaDbSession } from './session.js';

export interface ServerBackendOptions {
  runtime: SandboxRuntime;
  image: string;
  /** Writable mode: the largest dump a checkpoint holds (default {@link DEFAULT_MAX_CHECKPOINT_BYTES}); a larger one is refused (`too-large`). */
  maxCheckpointBytes?: number;
}

/** The largest dump of a writable session a checkpoint holds in memory by default: 256 MiB. */
export const DEFAULT_MAX_CHECKPOINT_BYTES = 256 * 1024 ** 2;

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

  async openSession(): Promise<SqlSession> {
    return new ReadOnlySession(await MariaDbSession.open(this.server));
  }

  /**
   * A new session on the shared server, on `state`'s database (a read-only checkpoint
   * carries no data: no session can have changed it; see {@link ReadOnlySession.saveState}).
   */
  async openSessionFrom(state: SqlSessionState): Promise<SqlSession> {
    if (state.data) throw new CheckpointError('CHECKPOINT_REFUSED', 'the checkpoint carries a writable session\'s databases; this backend is read-only', { details: { reason: 'other-mode' } });
    const session = await MariaDbSession.open(this.server);
    try {
      await session.useDatabase(state.database, true);
    } catch (error) {
      await session.close();
      throw error;
    }
    return new ReadOnlySession(session);
  }

  close(): Promise<void> {
    return this.server.stop();
  }
}

/**
 * A read-only session that can be checkpointed: its state is its current database, once
 * nothing else of the session differs from a new connection's (MariaDbSession.carriedSession);
 * the data is the server's, which no session can change.
 */
class ReadOnlySession implements SqlSession {
  constructor(private readonly session: MariaDbSession) {}

  execute(...args: Parameters<SqlSession['execute']>) {
    return this.session.execute(...args);
  }

  verify(...args: Parameters<SqlSession['verify']>) {
    return this.session.verify(...args);
  }

  useDatabase(database: string, fresh: boolean): Promise<void> {
    return this.session.useDatabase(database, fresh);
  }

  schema(database: string) {
    return this.session.schema(database);
  }

  /** @throws CheckpointError CHECKPOINT_REFUSED (`details.reason`, see MariaDbSession.carriedSession). */
  async saveState(): Promise<SqlSessionState> {
    const { database } = await this.session.carriedSession();
    return { database, data: null, notCarried: MARIADB_VALUES_NOT_CARRIED };
  }

  close(): Promise<void> {
    return this.session.close();
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
    return this.newSession();
  }

  private newSession(): PrivateServerSession {
    const session = new PrivateServerSession(() => MariaDbServer.start({ ...this.options, account: 'rw' }), this.maxDumpBytes);
    this.sessions.add(session);
    return session;
  }

  /** A session on a new server holding `state`'s dump (see {@link PrivateServerSession.saveState}). */
  async openSessionFrom(state: SqlSessionState): Promise<SqlSession> {
    const data = state.data;
    if (!data) throw new CheckpointError('CHECKPOINT_REFUSED', 'a writable MariaDB checkpoint carries its databases; this one has none', { details: { reason: 'other-mode' } });
    const session = this.newSession();
    try {
      await session.load({ ...state, data });
    } catch (error) {
      this.sessions.delete(session);
      await session.close();
      throw error;
    }
    return session;
  }

  private get maxDumpBytes(): number {
    return this.options.maxCheckpointBytes ?? DEFAULT_MAX_CHECKPOINT_BYTES;
  }

  async close(): Promise<void> {
    await Promise.all([...this.sessions].map((s) => s.close()));
    this.sessions.clear();
  }
}

/** What a writable MariaDB checkpoint does not carry (its `info.dropped.shellValues`). */
export const MARIADB_VALUES_NOT_CARRIED: readonly string[] = [
  'LAST_INSERT_ID(), ROW_COUNT() and FOUND_ROWS() (a restored connection starts them over)',
  'the RAND() sequence and CONNECTION_ID()',
  'the servers\' caches and table statistics (recomputed with ANALYZE after the load, as the image was)',
];

class PrivateServerSession implements SqlSession {
  private current: { server: MariaDbServer; session: MariaDbSession } | undefined;
  private spare: Promise<MariaDbServer> | undefined;

  constructor(
    private readonly startServer: () => Promise<MariaDbServer>,
    private readonly maxDumpBytes: number,
  ) {}

  /**
   * The session as a logical dump of every database the agent could change (schemas with
   * their AUTO_INCREMENT counters, rows, views, triggers, routines, events) and its current
   * database; refused when the session holds anything else (see MariaDbSession.carriedDatabase).
   * @throws CheckpointError CHECKPOINT_REFUSED (`details.reason`: that method's, or `too-large`).
   */
  async saveState(): Promise<SqlSessionState> {
    const current = this.current;
    if (!current) throw new CheckpointError('CHECKPOINT_REFUSED', 'the session has no database yet', { details: { reason: 'no-database' } });
    const { database, user } = await current.session.carriedSession();
    const dump = await current.server.dump(this.maxDumpBytes);
    if (!dump) throw new CheckpointError('CHECKPOINT_REFUSED', `the session's databases dump to more than ${this.maxDumpBytes} bytes`, { details: { reason: 'too-large', maxBytes: this.maxDumpBytes } });
    return { database, data: new Uint8Array(dump.buffer, dump.byteOffset, dump.byteLength), user, notCarried: MARIADB_VALUES_NOT_CARRIED };
  }

  /**
   * Starts the session on a new server holding `state`'s dump, on its database, as its agent
   * account. No spare is started yet (the first reset starts one): a fork of eight starts
   * eight servers, not sixteen.
   */
  async load(state: SqlSessionState & { data: Uint8Array }): Promise<void> {
    const server = await this.startServer();
    try {
      await server.load(state.data);
      this.current = { server, session: await MariaDbSession.open(server, state.user) };
    } catch (error) {
      await server.stop();
      throw error;
    }
    await this.current.session.useDatabase(state.database, false);
  }

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
