import { readFile } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { Worker } from 'node:worker_threads';
import initSqlJs from 'sql.js';
import { CheckpointError, DatasetError } from '../../../src/errors.js';
import { packagePath } from '../../../src/package-path.js';
import type { ExecuteLimits, QueryOutcome, SqlBackend, SqlSession, SqlSessionState } from '../backend.js';
import { DatabaseNotFoundError } from '../errors.js';
import { pyBytes, pyFloat, pyStr, type PyRepr } from '../python-repr.js';

type Cell = { t: 'none' } | { t: 'int'; v: string } | { t: 'float'; v: number } | { t: 'str'; v: string } | { t: 'bytes'; v: Uint8Array };
type WorkerOutcome = Exclude<QueryOutcome, { kind: 'rows' }> | { kind: 'rows'; columns: string[]; rows: Cell[][]; truncated: false | 'rows' | 'bytes' };

/** Python's sqlite3 values (int, float, str, bytes, None) as reprs. */
function render(cell: Cell): PyRepr {
  switch (cell.t) {
    case 'none':
      return 'None';
    case 'int':
      return cell.v;
    case 'float':
      return pyFloat(cell.v);
    case 'str':
      return pyStr(cell.v);
    case 'bytes':
      return pyBytes(cell.v);
  }
}

const WORKER = packagePath('envs', 'sql', 'sqlite', 'sqlite-worker.mjs');
/** SQLite's heap in each worker thread (PRAGMA hard_heap_limit): a statement that needs more fails with "out of memory". */
const HEAP_LIMIT_BYTES = 64 * 1024 ** 2;

/**
 * One sql.js worker thread over its own copies of the databases. SQLite cannot be
 * interrupted from outside its thread, so a call past its time limit ends the thread and
 * starts a new one (fresh copies); calls waiting behind it fail with the same outcome.
 */
class SqliteThread {
  private worker!: Worker;
  private nextId = 0;
  private pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  private constructor(
    private readonly files: Record<string, Uint8Array>,
    private readonly readOnly: boolean,
  ) {}

  static async start(files: Record<string, Uint8Array>, readOnly: boolean): Promise<SqliteThread> {
    const thread = new SqliteThread(files, readOnly);
    await thread.spawn();
    return thread;
  }

  private spawn(): Promise<void> {
    const worker = new Worker(WORKER, { workerData: { files: this.files, readOnly: this.readOnly, heapLimitBytes: HEAP_LIMIT_BYTES } });
    this.worker = worker;
    worker.unref();
    const pending = this.pending;
    return new Promise((resolve, reject) => {
      worker.on('message', (message: { ready?: boolean; id?: number; ok?: boolean; value?: unknown; error?: string }) => {
        if (message.ready) return resolve();
        const waiter = pending.get(message.id!);
        pending.delete(message.id!);
        if (message.ok) waiter?.resolve(message.value);
        else waiter?.reject(new Error(message.error));
      });
      worker.once('error', reject);
    });
  }

  call<T>(message: Record<string, unknown>): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.worker.postMessage({ ...message, id });
    });
  }

  /** `call`, or 'timeout' after `timeoutMs` (the thread then restarted on fresh copies). */
  async callWithin<T>(message: Record<string, unknown>, timeoutMs: number): Promise<T | 'timeout'> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    const result = await Promise.race([this.call<T>(message), timeout]);
    clearTimeout(timer);
    if (result !== 'timeout') return result;
    const waiting = this.pending;
    this.pending = new Map();
    await this.worker.terminate();
    await this.spawn();
    for (const waiter of waiting.values()) waiter.resolve('timeout');
    return 'timeout';
  }

  terminate(): Promise<number> {
    return this.worker.terminate();
  }
}

/** The outcome of a worker's `exec`, its cells rendered as Python reprs; a timeout as InterCode's interrupted query. */
function outcomeOf(result: WorkerOutcome | 'timeout', limits: ExecuteLimits, restarted: string): QueryOutcome {
  if (result === 'timeout') {
    return { kind: 'error', message: `Query execution was interrupted (time limit of ${limits.timeoutMs / 1000} s exceeded; ${restarted})`, timedOut: true };
  }
  if (result.kind !== 'rows') return result;
  return { ...result, rows: result.rows.map((row) => row.map(render)) };
}

export class SqliteBackend implements SqlBackend {
  private readonly sessions = new Set<SqliteSession>();
  /** Read-only mode: the thread golds run in, over pristine copies no session ever reaches. */
  private verifier: Promise<SqliteThread> | undefined;

  /** @param files database name → SQLite file contents. */
  constructor(
    private readonly files: ReadonlyMap<string, Uint8Array>,
    private readonly writable: boolean,
    readonly identity: string,
  ) {}

  get dataFixed(): boolean {
    return !this.writable;
  }

  /** None: sessions run in worker threads of this process. */
  sandboxIds(): readonly string[] {
    return [];
  }

  /**
   * `.sqlite`/`.db` files, each a database named after the file (Spider's `<db>/<db>.sqlite`).
   * @throws DatasetError naming a file that cannot be read or is not a SQLite database.
   */
  static async fromFiles(paths: readonly string[], writable: boolean): Promise<SqliteBackend> {
    const files = new Map<string, Uint8Array>();
    for (const path of paths) {
      let bytes: Buffer;
      try {
        bytes = await readFile(path);
      } catch (error) {
        throw new DatasetError({ file: path }, `cannot read the SQLite file (${(error as NodeJS.ErrnoException).code ?? 'unknown error'})`, error);
      }
      if (bytes.length > 0 && !bytes.subarray(0, 16).toString('latin1').startsWith('SQLite format 3')) {
        throw new DatasetError({ file: path }, 'not a SQLite database (no "SQLite format 3" header)');
      }
      files.set(basename(path, extname(path)), new Uint8Array(bytes));
    }
    return new SqliteBackend(files, writable, `sqlite:${paths.join(',')}`);
  }

  /** Databases made by running SQL scripts (name → script), e.g. the built-in library.sql. */
  static async fromScripts(scripts: ReadonlyMap<string, string>, writable: boolean): Promise<SqliteBackend> {
    const SQL = await initSqlJs();
    const files = new Map<string, Uint8Array>();
    for (const [name, script] of scripts) {
      const db = new SQL.Database();
      db.run(script);
      files.set(name, db.export());
      db.close();
    }
    return new SqliteBackend(files, writable, `sqlite-scripts:${[...scripts.keys()].join(',')}`);
  }

  async openSession(): Promise<SqlSession> {
    const files = Object.fromEntries(this.files);
    const session = new SqliteSession(await SqliteThread.start(files, !this.writable), this.writable ? undefined : () => this.verifierThread());
    this.sessions.add(session);
    return session;
  }

  /** A session on a new thread whose connection holds `state`'s data (see SqliteSession.saveState). */
  async openSessionFrom(state: SqlSessionState): Promise<SqlSession> {
    const session = (await this.openSession()) as SqliteSession;
    await session.load(state);
    return session;
  }

  private verifierThread(): Promise<SqliteThread> {
    if (!this.verifier) {
      this.verifier = SqliteThread.start(Object.fromEntries(this.files), true);
      this.verifier.catch(() => (this.verifier = undefined));
    }
    return this.verifier;
  }

  async close(): Promise<void> {
    const verifier = this.verifier;
    this.verifier = undefined;
    await Promise.all([...[...this.sessions].map((s) => s.close()), verifier?.then((t) => t.terminate()).catch(() => undefined)]);
    this.sessions.clear();
  }
}

/**
 * One agent's session: a worker thread over private copies. In read-only mode golds run in
 * the backend's verifier thread (pristine copies, a connection the agent never used); in
 * writable mode they read the agent's changed data, on a new connection over a copy of it
 * (none of the agent's temporary objects or connection settings).
 */
class SqliteSession implements SqlSession {
  private database: string | undefined;

  constructor(
    private readonly thread: SqliteThread,
    private readonly verifier: (() => Promise<SqliteThread>) | undefined,
  ) {}

  async execute(sql: string, limits: ExecuteLimits): Promise<QueryOutcome> {
    const result = await this.thread.callWithin<WorkerOutcome>({ op: 'exec', sql, maxRows: limits.maxRows, maxBytes: limits.maxBytes }, limits.timeoutMs);
    if (result === 'timeout' && this.database !== undefined) await this.thread.call({ op: 'use', db: this.database, fresh: true });
    return outcomeOf(result, limits, 'the session restarted on a fresh copy of the database');
  }

  async verify(sql: string, limits: ExecuteLimits): Promise<QueryOutcome> {
    if (this.database === undefined) return { kind: 'error', message: 'No database selected', timedOut: false };
    if (!this.verifier) {
      // Writable: the agent's data as it stands, on a connection of the gold's own (see the worker's verifyCopy).
      const result = await this.thread.callWithin<WorkerOutcome>({ op: 'verify-copy', sql, maxRows: limits.maxRows, maxBytes: limits.maxBytes }, limits.timeoutMs);
      if (result === 'timeout') await this.thread.call({ op: 'use', db: this.database, fresh: true });
      return outcomeOf(result, limits, 'the gold was stopped; the session restarted on a fresh copy of the database');
    }
    const thread = await this.verifier();
    const message = { op: 'verify', db: this.database, sql, maxRows: limits.maxRows, maxBytes: limits.maxBytes };
    const result = await thread.callWithin<WorkerOutcome>(message, limits.timeoutMs);
    return outcomeOf(result, limits, 'the gold was stopped');
  }

  async useDatabase(database: string, fresh: boolean): Promise<void> {
    const answer = await this.thread.call<{ unknown: boolean; known?: string[] }>({ op: 'use', db: database, fresh });
    if (answer.unknown) throw new DatabaseNotFoundError(database, answer.known ?? []);
    this.database = database;
  }

  schema(database: string): Promise<{ table: string; columns: string[] }[]> {
    return this.thread.call({ op: 'schema', db: database });
  }

  /**
   * The connection's database and (writable mode) its bytes, read between statements (see the
   * worker's `save`).
   * @throws CheckpointError CHECKPOINT_REFUSED: no database selected, a PRAGMA run, temporary
   *   objects, an attached database or an open transaction (`details.reason`).
   */
  async saveState(): Promise<SqlSessionState> {
    const saved = await this.thread.call<{ refused?: string; database?: string; data?: Uint8Array | null }>({ op: 'save' });
    if (saved.refused) throw new CheckpointError('CHECKPOINT_REFUSED', `the SQLite session cannot be carried exactly (${saved.refused})`, { details: { reason: saved.refused } });
    return { database: saved.database!, data: saved.data ?? null };
  }

  /** Replaces the connection by one on `state`'s data. */
  async load(state: SqlSessionState): Promise<void> {
    const answer = await this.thread.call<{ unknown: boolean; known?: string[] }>({ op: 'load', db: state.database, data: state.data });
    if (answer.unknown) throw new DatabaseNotFoundError(state.database, answer.known ?? []);
    this.database = state.database;
  }

  async close(): Promise<void> {
    await this.thread.terminate();
  }
}
