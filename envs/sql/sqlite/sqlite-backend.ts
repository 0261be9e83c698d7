import { readFile } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { Worker } from 'node:worker_threads';
import initSqlJs from 'sql.js';
import { DatasetError } from '../../../src/errors.js';
import { packagePath } from '../../../src/package-path.js';
import type { ExecuteLimits, QueryOutcome, SqlBackend, SqlSession } from '../backend.js';
import { DatabaseNotFoundError } from '../errors.js';
import { pyBytes, pyFloat, pyStr, type PyRepr } from '../python-repr.js';

type Cell = { t: 'none' } | { t: 'int'; v: string } | { t: 'float'; v: number } | { t: 'str'; v: string } | { t: 'bytes'; v: Uint8Array };
type WorkerOutcome = Exclude<QueryOutcome, { kind: 'rows' }> | { kind: 'rows'; columns: string[]; rows: Cell[][]; truncated: boolean };

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

/**
 * The embedded backend: SQLite databases (sql.js, WebAssembly) in-process, no Docker. Each
 * session has its own copy of the database in a worker thread — private, thrown away when
 * the session starts fresh — read-only (`PRAGMA query_only`) unless writable.
 */
export class SqliteBackend implements SqlBackend {
  private readonly sessions = new Set<SqliteSession>();

  /** @param files database name → SQLite file contents. */
  constructor(
    private readonly files: ReadonlyMap<string, Uint8Array>,
    private readonly writable: boolean,
    readonly identity: string,
  ) {}

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
    const session = await SqliteSession.start(Object.fromEntries(this.files), !this.writable);
    this.sessions.add(session);
    return session;
  }

  async close(): Promise<void> {
    await Promise.all([...this.sessions].map((s) => s.close()));
    this.sessions.clear();
  }
}

class SqliteSession implements SqlSession {
  private worker!: Worker;
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private database: string | undefined;

  private constructor(
    private readonly files: Record<string, Uint8Array>,
    private readonly readOnly: boolean,
  ) {}

  static async start(files: Record<string, Uint8Array>, readOnly: boolean): Promise<SqliteSession> {
    const session = new SqliteSession(files, readOnly);
    await session.spawn();
    return session;
  }

  private spawn(): Promise<void> {
    this.worker = new Worker(WORKER, { workerData: { files: this.files, readOnly: this.readOnly } });
    this.worker.unref();
    const worker = this.worker;
    return new Promise((resolve, reject) => {
      worker.on('message', (message: { ready?: boolean; id?: number; ok?: boolean; value?: unknown; error?: string }) => {
        if (message.ready) return resolve();
        const waiter = this.pending.get(message.id!);
        this.pending.delete(message.id!);
        if (message.ok) waiter?.resolve(message.value);
        else waiter?.reject(new Error(message.error));
      });
      worker.once('error', reject);
    });
  }

  private call<T>(message: Record<string, unknown>): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.worker.postMessage({ ...message, id });
    });
  }

  async execute(sql: string, limits: ExecuteLimits): Promise<QueryOutcome> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), limits.timeoutMs);
    });
    const result = await Promise.race([this.call<WorkerOutcome>({ op: 'exec', sql, maxRows: limits.maxRows }), timeout]);
    clearTimeout(timer);
    if (result === 'timeout') {
      // SQLite cannot be interrupted from outside its thread: end the thread, start over on a fresh copy.
      const old = this.worker;
      this.pending.clear();
      await old.terminate();
      await this.spawn();
      if (this.database !== undefined) await this.call({ op: 'use', db: this.database, fresh: true });
      return {
        kind: 'error',
        message: `Query execution was interrupted (time limit of ${limits.timeoutMs / 1000} s exceeded; the session restarted on a fresh copy of the database)`,
        timedOut: true,
      };
    }
    if (result.kind !== 'rows') return result;
    return { ...result, rows: result.rows.map((row) => row.map(render)) };
  }

  async useDatabase(database: string, fresh: boolean): Promise<void> {
    const answer = await this.call<{ unknown: boolean; known?: string[] }>({ op: 'use', db: database, fresh });
    if (answer.unknown) throw new DatabaseNotFoundError(database, answer.known ?? []);
    this.database = database;
  }

  schema(database: string): Promise<{ table: string; columns: string[] }[]> {
    return this.call({ op: 'schema', db: database });
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}
