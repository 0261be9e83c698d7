import type { PyRepr } from './python-repr.js';

/** What one SQL statement gave back. Failures are outcomes (the agent sees them), never exceptions. */
export type QueryOutcome =
  | {
      kind: 'rows';
      columns: string[];
      /** Each cell as Python's repr, as InterCode's driver returned it. */
      rows: PyRepr[][];
      /**
       * Whether the result was cut short, and by which cap: `rows` (more rows than
       * {@link ExecuteLimits.maxRows}) or `bytes` (more cell bytes than {@link ExecuteLimits.maxBytes});
       * only the first `rows.length` rows are kept, and the query was stopped there.
       */
      truncated: false | 'rows' | 'bytes';
    }
  /** A statement without a result set (USE, SET, INSERT…). */
  | { kind: 'ok'; affectedRows: number }
  | {
      kind: 'error';
      /** The server's message, as InterCode showed it after "Error executing query: ". */
      message: string;
      /** The statement ran past its time limit and was stopped. */
      timedOut: boolean;
      /** A gold the harness would not run where it would be exact (it then matches nothing, as one stopped by its time limit). */
      notRun?: true;
    };

export interface ExecuteLimits {
  timeoutMs: number;
  /** Rows kept from a result set; more are dropped (and the query stopped) with `truncated: 'rows'`. */
  maxRows: number;
  /**
   * Bytes of cell text kept from a result set, counted as the rows arrive (a row that would
   * pass the cap is dropped, and the query stopped, with `truncated: 'bytes'`), so a result
   * never holds more than this in the harness's memory (plus the one row being read).
   */
  maxBytes: number;
}

/** One connection's worth of state: a current database, session variables, and (when writable) the data. */
export interface SqlSession {
  /** Runs one statement. Throws only when the backend itself is gone ({@link SandboxError}). */
  execute(sql: string, limits: ExecuteLimits): Promise<QueryOutcome>;
  /**
   * Back to a fresh session on `database` (InterCode ran `use <db>`).
   * @param fresh the session ran something that may have changed its state (or its data, when writable): start over.
   * @throws DatabaseNotFoundError when the backend has no such database.
   */
  useDatabase(database: string, fresh: boolean): Promise<void>;
  /**
   * Runs `sql` (a gold query) for the harness, never in the agent's session: on a connection
   * of the harness's own, in a fresh session on the current database, over the data the
   * agent's session sees committed (the original data in read-only mode). Nothing the agent
   * ran (session variables, pragmas, locks, temporary tables) reaches it.
   */
  verify(sql: string, limits: ExecuteLimits): Promise<QueryOutcome>;
  /** Tables (by name) and their columns (in order), for the handicap observation. */
  schema(database: string): Promise<{ table: string; columns: string[] }[]>;
  /**
   * The session's state for a checkpoint (backends that can; see {@link SqlBackend.openSessionFrom}).
   * @throws CheckpointError CHECKPOINT_REFUSED when it cannot be carried exactly (`details.reason`).
   */
  saveState?(): Promise<SqlSessionState>;
  close(): Promise<void>;
}

/** A session saved by {@link SqlSession.saveState}: its current database, and its data when it may differ from the backend's. */
export interface SqlSessionState {
  readonly database: string;
  /** The database's bytes; null: the backend's own data (read-only mode: it cannot have changed). */
  readonly data: Uint8Array | null;
  /** The agent's account name, where a backend's sessions have one that objects the agent made name (MariaDB: their DEFINER). */
  readonly user?: string;
  /** What of the session the state does not carry (a checkpoint's `info.dropped.shellValues`); absent: SQLite's list. */
  readonly notCarried?: readonly string[];
}

/**
 * Where sessions come from: one server (or file set) shared by every env built on it.
 * Invariant every backend keeps: a session that ran only session-neutral statements
 * (statement-kind.ts) since `useDatabase` sees exactly the backend's original data, so
 * gold results computed in one such session hold for all of them.
 */
export interface SqlBackend {
  /** For messages and cache keys: what data this backend serves (image tag, file hashes). */
  readonly identity: string;
  /** No session can change the data (read-only mode): a gold's result holds for every session, touched or not. */
  readonly dataFixed: boolean;
  /** The sandboxes serving this backend now (for CPU accounting); none when it runs in-process. */
  sandboxIds(): readonly string[];
  openSession(): Promise<SqlSession>;
  /** A new session continuing a saved one (backends whose sessions can be saved). */
  openSessionFrom?(state: SqlSessionState): Promise<SqlSession>;
  close(): Promise<void>;
}
