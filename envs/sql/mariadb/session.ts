import type mysql from 'mysql2';
import type { FieldPacket, ResultSetHeader } from 'mysql2';
import { CheckpointError, SandboxError } from '../../../src/errors.js';
import type { ExecuteLimits, QueryOutcome, SqlSession } from '../backend.js';
import { DatabaseNotFoundError } from '../errors.js';
import type { PyRepr } from '../python-repr.js';
import { isSessionNeutral } from '../statement-kind.js';
import { converterFor } from './convert.js';
import { sortsRows, withUnsortedGroups } from './group-order.js';
import type { MariaDbServer, SessionAccount } from './server.js';

/** MySQL error numbers this session tells apart. */
const ER_QUERY_INTERRUPTED = 1317;
const ER_CONNECTION_KILLED = 1927;
/** ONLY_FULL_GROUP_BY refusals of a grouped query: a column not in GROUP BY (1055), or used in HAVING (1463). */
const NOT_IN_GROUP_BY = new Set([1055, 1463]);
/**
 * Internal temporary tables on disk (Aria) for one statement. A sort over an in-memory
 * temporary table (GROUP BY … ORDER BY count(*) LIMIT 1) breaks ties by the rows' memory
 * addresses, so the same query on the same data returned different tied rows from one run
 * to the next; over an on-disk one it breaks them by insertion order, every run the same.
 * On disk costs more server time, so only statements that sort get it.
 */
const STABLE_TIES = 'tmp_memory_table_size = 0';
/** The server's SQL mode without ONLY_FULL_GROUP_BY (see {@link MariaDbSession.runAsMysql8}). */
const GROUP_BY_UNCHECKED = "sql_mode = REPLACE(@@sql_mode, 'ONLY_FULL_GROUP_BY', '')";

/** `sql` with session variables set for this one statement (MariaDB's SET STATEMENT … FOR). */
const withSettings = (settings: readonly string[], sql: string) => (settings.length === 0 ? sql : `SET STATEMENT ${settings.join(', ')} FOR ${sql}`);

const quoteIdentifier = (name: string) => `\`${name.replace(/`/g, '``')}\``;

/**
 * Statements whose effect may stay in the session, not in the data (a checkpoint carries
 * only the data): matched anywhere in the text, so a trigger or a procedure that does it is
 * refused when the agent creates it (conservative: a string holding `@` refuses too).
 */
const UNCARRIED_STATEMENTS: readonly (readonly [string, RegExp])[] = [
  ['user-variables', /@(?!@)|@@(?:session\.|local\.)?[a-z_]*\s*:?=/i],
  ['temporary-tables', /\btemporary\b/i],
  ['locks', /lock/i],
  ['prepared-statements', /\bprepare\b|\bexecute\b/i],
  ['handler', /\bhandler\b/i],
  ['xa-transaction', /\bxa\b/i],
  // A sequence's dump holds its next uncached value, not the session's place in its cache.
  ['sequences', /sequence|nextval|lastval|setval|\b(?:next|previous)\s+value\b/i],
  // The account itself (its default role, its password): a restored agent's account is made anew.
  ['account', /\brole\b|\bpassword\b/i],
];
/**
 * Tables a dump would not give back as they are: a MyISAM, Aria or MEMORY table with holes
 * left by deleted rows (the next insert fills a hole, and a table reloaded from a dump has none,
 * so a later unordered SELECT lists rows in another order). InnoDB keeps rows in key order.
 */
const FRAGMENTED_TABLES =
  "SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' AND engine <> 'InnoDB' AND data_free > 0 AND table_schema NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')";
/** Every session variable of a connection and its current role, to compare the agent's with a new connection's. */
const SESSION_VARIABLES = "SELECT variable_name, variable_value FROM information_schema.session_variables UNION ALL SELECT 'CURRENT_ROLE()', CURRENT_ROLE()";
/** Session variables that differ between any two connections (ids, seeds, counters, the clock). */
const VARYING_VARIABLES = new Set(['PSEUDO_THREAD_ID', 'RAND_SEED1', 'RAND_SEED2', 'LAST_INSERT_ID', 'IDENTITY', 'WARNING_COUNT', 'ERROR_COUNT', 'IN_TRANSACTION', 'LAST_GTID', 'EXTERNAL_USER', 'PROXY_USER']);
/** Two connections' `timestamp` (the clock, unless the session set it) agree within this many seconds. */
const CLOCK_SKEW_S = 5;
/** Whether `name`'s values in the agent's session and a new connection's differ as a setting would (not as the clock does). */
function differs(name: string, agent: string, fresh: string | undefined): boolean {
  if (name === 'TIMESTAMP') return fresh === undefined || !(Math.abs(Number(agent) - Number(fresh)) <= CLOCK_SKEW_S);
  return !VARYING_VARIABLES.has(name) && fresh !== agent;
}

/** After a statement's time limit, how long KILL QUERY may take before the connection itself is ended. */
const KILL_GRACE_MS = 5_000;

/** A cell's size as the byte cap counts it: the text (or bytes) mysql2 gave, 8 for anything else. */
function cellBytes(cell: unknown): number {
  if (typeof cell === 'string') return Buffer.byteLength(cell, 'utf8');
  if (Buffer.isBuffer(cell)) return cell.length;
  return 8;
}

/** The connection ended under a statement (the agent's KILL, a server gone): the session decides what it means. */
class ConnectionLost extends Error {}

/**
 * One mysql2 connection on an account of its own (made for it, dropped with it), running
 * statements as MySQL 8 would and within the caps of {@link ExecuteLimits}.
 */
class MariaDbConnection {
  private ended = false;

  private constructor(
    private readonly server: MariaDbServer,
    private readonly account: SessionAccount,
    private readonly connection: mysql.Connection,
  ) {
    connection.once('end', () => (this.ended = true));
    connection.on('error', (error: { fatal?: boolean }) => {
      if (error.fatal) this.ended = true;
    });
  }

  /** @throws the driver's error when the server refuses. */
  static async open(server: MariaDbServer, user?: string): Promise<MariaDbConnection> {
    const account = await server.openAccount(user);
    try {
      return new MariaDbConnection(server, account, await server.connect(account));
    } catch (error) {
      await server.dropAccount(account);
      throw error;
    }
  }

  /** The account's name. */
  get user(): string {
    return this.account.user;
  }

  /** False once the connection has ended (killed, timed out by the server, or closed). */
  get alive(): boolean {
    return !this.ended;
  }

  /**
   * Runs `sql` as MySQL 8 would: groups unsorted (see group-order.ts), and MySQL 8's
   * ONLY_FULL_GROUP_BY where MariaDB can tell it (see {@link MariaDbConnection.runAsMysql8});
   * and ties in a sort broken the same way every run ({@link STABLE_TIES}).
   * When the rewritten statement fails, the original runs instead, so the agent sees the
   * server's own error for the text it sent.
   * @throws ConnectionLost when the connection ends under the statement.
   */
  async execute(sql: string, limits: ExecuteLimits): Promise<QueryOutcome> {
    const unsorted = withUnsortedGroups(sql);
    if (unsorted !== null) {
      const outcome = await this.runAsMysql8(unsorted, limits);
      if (!(outcome.kind === 'error' && !outcome.timedOut)) return outcome;
    }
    return this.runAsMysql8(sql, limits);
  }

  /**
   * The server runs with ONLY_FULL_GROUP_BY, as MySQL 8 did. MariaDB's check agrees with
   * MySQL 8's where a query aggregates without GROUP BY beside a plain column (both refuse
   * it), but it refuses grouped queries whose columns MySQL 8 accepts as functionally
   * dependent on the GROUP BY key (about 40 Spider gold queries): those run again with
   * the check off, as MySQL 8 would have run them.
   */
  private async runAsMysql8(sql: string, limits: ExecuteLimits): Promise<QueryOutcome> {
    const settings = sortsRows(sql) ? [STABLE_TIES] : [];
    const first = await this.run(withSettings(settings, sql), limits);
    if (first.errno === undefined || !NOT_IN_GROUP_BY.has(first.errno)) return first.outcome;
    return (await this.run(withSettings([...settings, GROUP_BY_UNCHECKED], sql), limits)).outcome;
  }

  /**
   * One statement; `errno` is the server's error number when it failed. Rows are kept as
   * they arrive until a cap is reached; then the statement is stopped (KILL QUERY) and what
   * still arrives is dropped. A statement that does not end within its time limit is
   * stopped the same way, and its connection ended {@link KILL_GRACE_MS} later if it still
   * has not.
   */
  private run(sql: string, limits: ExecuteLimits): Promise<{ outcome: QueryOutcome; errno?: number }> {
    if (this.ended) return Promise.reject(new ConnectionLost('the connection had ended'));
    return new Promise((resolve, reject) => {
      let fields: FieldPacket[] | undefined;
      let header: ResultSetHeader | undefined;
      const raw: unknown[][] = [];
      let bytes = 0;
      let truncated: false | 'rows' | 'bytes' = false;
      let timedOut = false;
      let settled = false;
      let failure: (Error & { errno?: number; fatal?: boolean }) | undefined;
      const threadId = this.connection.threadId!;
      const query = this.connection.query({ sql, rowsAsArray: true });
      let grace: NodeJS.Timeout | undefined;
      const timer = setTimeout(() => {
        timedOut = true;
        this.server.killQuery(threadId);
        grace = setTimeout(() => this.server.killConnection(threadId), KILL_GRACE_MS);
      }, limits.timeoutMs);
      const settle = () => {
        settled = true;
        clearTimeout(timer);
        clearTimeout(grace);
        this.connection.removeListener('end', onEnd);
        this.connection.removeListener('error', onConnectionError);
      };
      // A connection that ends under the statement may never end the query (a write to a
      // closed socket fails on the connection, not the query): settle on either.
      const onEnd = (cause?: Error) => {
        if (settled) return;
        settle();
        reject(new ConnectionLost(cause?.message ?? failure?.message ?? 'the connection ended'));
      };
      const onConnectionError = (error: Error & { fatal?: boolean }) => {
        if (error.fatal) onEnd(error);
      };
      this.connection.once('end', onEnd);
      this.connection.on('error', onConnectionError);
      const stop = (why: 'rows' | 'bytes') => {
        truncated = why;
        this.server.killQuery(threadId);
      };
      query.on('fields', (f: FieldPacket[] | undefined) => {
        if (f && !fields) fields = f;
      });
      query.on('result', (row: unknown, index: number) => {
        if (index > 0 || truncated) return; // a later result set (CALL): InterCode's cursor kept the first
        if (!Array.isArray(row)) {
          header ??= row as ResultSetHeader;
          return;
        }
        if (raw.length >= limits.maxRows) return stop('rows');
        for (const cell of row) bytes += cellBytes(cell);
        if (bytes > limits.maxBytes) return stop('bytes');
        raw.push(row);
      });
      query.on('error', (error: Error) => {
        failure = error;
        if ((error as { fatal?: boolean }).fatal) onEnd(error);
      });
      query.on('end', () => {
        if (settled) return;
        settle();
        if (failure?.fatal || failure?.errno === ER_CONNECTION_KILLED) {
          // KILL of its own connection answers with an error, then the server closes the socket.
          this.ended = true;
          reject(new ConnectionLost(failure.message));
          return;
        }
        if (timedOut) {
          // Stopped by KILL QUERY: an error, or (BENCHMARK, SLEEP) a meaningless value.
          resolve({ outcome: { kind: 'error', message: `Query execution was interrupted (time limit of ${limits.timeoutMs / 1000} s exceeded)`, timedOut: true } });
          return;
        }
        if (failure && !(truncated && failure.errno === ER_QUERY_INTERRUPTED)) {
          resolve({ outcome: { kind: 'error', message: failure.message, timedOut: false }, ...(failure.errno === undefined ? {} : { errno: failure.errno }) });
          return;
        }
        if (!fields) {
          resolve({ outcome: { kind: 'ok', affectedRows: header?.affectedRows ?? 0 } });
          return;
        }
        const converters = fields.map(converterFor);
        const rows: PyRepr[][] = raw.map((row) => row.map((cell, i) => converters[i]!(cell)));
        resolve({ outcome: { kind: 'rows', columns: fields.map((f) => f.name), rows, truncated } });
      });
    });
  }

  /** A harness statement (USE, schema). @throws ConnectionLost, or the server's error. */
  query(sql: string): Promise<unknown[][]> {
    return this.whileConnected<unknown[][]>((done) => this.connection.query({ sql, rowsAsArray: true }, (error, rows) => done(error, rows as unknown[][])));
  }

  /**
   * A callback-style command that fails with ConnectionLost when the connection ends under it
   * (mysql2 reports a write to a closed socket on the connection, and never calls back).
   */
  private whileConnected<T>(start: (done: (error: (Error & { fatal?: boolean }) | null, value: T) => void) => void): Promise<T> {
    if (this.ended) return Promise.reject(new ConnectionLost('the connection had ended'));
    return new Promise<T>((resolve, reject) => {
      const cleanup = () => {
        this.connection.removeListener('end', onEnd);
        this.connection.removeListener('error', onError);
      };
      const onEnd = () => {
        cleanup();
        reject(new ConnectionLost('the connection ended'));
      };
      const onError = (error: Error & { fatal?: boolean }) => {
        if (!error.fatal) return;
        cleanup();
        reject(new ConnectionLost(error.message));
      };
      this.connection.once('end', onEnd);
      this.connection.on('error', onError);
      start((error, value) => {
        cleanup();
        if (!error) resolve(value);
        else reject(error.fatal ? new ConnectionLost(error.message) : error);
      });
    });
  }

  escape(value: string): string {
    return this.connection.escape(value);
  }

  /** Ends the connection and drops its account. Never throws. */
  async close(): Promise<void> {
    const threadId = this.connection.threadId ?? undefined;
    this.connection.destroy();
    this.ended = true;
    await this.server.dropAccount(this.account, threadId);
  }
}

/**
 * One episode's session on a {@link MariaDbServer}: the agent's connection, and the
 * harness's own for golds ({@link MariaDbSession.verify}), each on an account of its own.
 * A connection the agent ends (KILL, wait_timeout) is replaced by a new one on a new
 * account; only a server that no longer answers is a lost sandbox.
 */
export class MariaDbSession implements SqlSession {
  private currentDatabase: string | undefined;
  /** Why a checkpoint cannot carry this session, from the text of what the agent ran since it was fresh (see {@link MariaDbSession.carriedSession}). */
  private readonly uncarried = new Set<string>();
  private gold: { connection: MariaDbConnection; database: string | undefined } | undefined;
  /** The next agent connection, opened after the first replacement (see {@link MariaDbSession.replaceAgent}). */
  private spare: Promise<MariaDbConnection> | undefined;

  private constructor(
    private readonly server: MariaDbServer,
    private agent: MariaDbConnection,
  ) {}

  /** @param agentUser the agent account's name (a restored session's: the saved one's); default: a new random one. */
  static async open(server: MariaDbServer, agentUser?: string): Promise<MariaDbSession> {
    return new MariaDbSession(server, await MariaDbConnection.open(server, agentUser).catch((error) => Promise.reject(lost(error))));
  }

  async execute(sql: string, limits: ExecuteLimits): Promise<QueryOutcome> {
    for (const [reason, pattern] of UNCARRIED_STATEMENTS) if (pattern.test(sql)) this.uncarried.add(reason);
    if (!this.agent.alive) await this.replaceAgent();
    try {
      return await this.agent.execute(sql, limits);
    } catch (error) {
      if (!(error instanceof ConnectionLost)) throw error;
      await this.replaceAgent(error);
      return { kind: 'error', message: `${error.message} (the connection was lost; a new session was opened)`, timedOut: false };
    }
  }

  /**
   * A new agent connection on a new account, on the current database: the spare opened in
   * the background after the last replacement when there is one (no agent statement ever ran
   * in it), so a reset after a changed episode costs one USE, not an account and a login.
   * @param cause the connection was lost under a statement: first make sure the server still answers.
   * @throws SandboxError when the server no longer answers.
   */
  private async replaceAgent(cause?: unknown): Promise<void> {
    void this.agent.close();
    if (cause !== undefined && !(await this.server.answers())) throw lost(cause);
    try {
      const spare = this.spare;
      this.spare = MariaDbConnection.open(this.server);
      this.spare.catch(() => undefined);
      let next = await spare?.catch(() => undefined);
      if (!next?.alive) next = await MariaDbConnection.open(this.server);
      this.agent = next;
      if (this.currentDatabase !== undefined) await this.agent.query(`USE ${quoteIdentifier(this.currentDatabase)}`);
    } catch (error) {
      throw lost(error);
    }
  }

  async verify(sql: string, limits: ExecuteLimits): Promise<QueryOutcome> {
    const database = this.currentDatabase;
    if (database === undefined) return { kind: 'error', message: 'No database selected', timedOut: false };
    try {
      if (!this.gold?.connection.alive) {
        void this.gold?.connection.close();
        this.gold = { connection: await MariaDbConnection.open(this.server), database: undefined };
      }
      const gold = this.gold;
      if (gold.database !== database) {
        gold.database = undefined;
        await gold.connection.query(`USE ${quoteIdentifier(database)}`);
        gold.database = database;
      }
      const outcome = await gold.connection.execute(sql, limits);
      // A gold that may have changed its session (user variables, …) leaves the next one a new connection.
      if (!isSessionNeutral(sql)) {
        this.gold = undefined;
        void gold.connection.close();
      }
      return outcome;
    } catch (error) {
      if (error instanceof ConnectionLost || !(error instanceof Error && 'errno' in error)) throw lost(error);
      throw error;
    }
  }

  async useDatabase(database: string, fresh: boolean): Promise<void> {
    if (!fresh && this.currentDatabase === database && this.agent.alive) return;
    this.currentDatabase = undefined;
    try {
      // A changed session gets a new connection on a new account, not COM_RESET_CONNECTION:
      // the reset leaves a `SET ROLE NONE` in place (the next USE is refused), and a new
      // session is by definition what a new env gets.
      if (fresh) this.uncarried.clear();
      if (fresh || !this.agent.alive) await this.replaceAgent();
      await this.agent.query(`USE ${quoteIdentifier(database)}`);
    } catch (error) {
      if (error instanceof SandboxError) throw error;
      if (error instanceof ConnectionLost) {
        await this.replaceAgent(error);
        return this.useDatabase(database, false);
      }
      const known = (await this.agent.query('SHOW DATABASES')).map((r) => String(r[0])).filter((d) => d !== 'information_schema');
      throw new DatabaseNotFoundError(database, known);
    }
    this.currentDatabase = database;
  }

  /**
   * The database the agent's session is on and its account's name, when everything else of
   * the session is what a new connection on that account has (so a checkpoint carries the
   * session as its data plus these names). The name is carried because views, triggers and
   * routines the agent made name it as DEFINER, and MariaDB runs them with the definer's
   * rights only when the definer is not the caller (its role is not active there): under
   * another name they would fail where the saved session's ran.
   * Refused (conservatively, from the text of every statement the agent ran since the
   * session was fresh, then from the session itself): user variables, temporary tables,
   * locks (LOCK TABLES, GET_LOCK), prepared statements, HANDLER cursors, XA, sequences; then
   * an open transaction, a non-InnoDB table with holes ({@link FRAGMENTED_TABLES}), a session
   * variable that differs from a new connection's.
   * @throws CheckpointError CHECKPOINT_REFUSED (`details.reason`).
   */
  async carriedSession(): Promise<{ database: string; user: string }> {
    const refuse = (reason: string, what: string) => new CheckpointError('CHECKPOINT_REFUSED', `the MariaDB session cannot be carried exactly (${what})`, { details: { reason } });
    const [first] = this.uncarried;
    if (first !== undefined) throw refuse(first, `the agent ran a statement that may leave ${first.replace(/-/g, ' ')} in its session`);
    try {
      if (!this.agent.alive) await this.replaceAgent();
      const [[inTransaction, database]] = (await this.agent.query('SELECT @@in_transaction, DATABASE()')) as [[unknown, unknown]];
      if (Number(inTransaction) !== 0) throw refuse('open-transaction', 'an open transaction');
      if (database === null || database === undefined) throw refuse('no-database', 'no database selected');
      const fragmented = await this.agent.query(FRAGMENTED_TABLES);
      if (fragmented.length > 0) throw refuse('fragmented-table', `a non-InnoDB table with deleted rows' holes: ${fragmented.map(([db, table]) => `${String(db)}.${String(table)}`).join(', ')}`);
      const reference = await MariaDbConnection.open(this.server);
      try {
        const [agent, fresh] = await Promise.all([this.agent.query(SESSION_VARIABLES), reference.query(SESSION_VARIABLES)]);
        const freshValues = new Map(fresh.map(([name, value]) => [String(name), String(value)]));
        const changed = agent.map(([name, value]) => [String(name), String(value)] as const).filter(([name, value]) => differs(name, value, freshValues.get(name)));
        if (changed.length > 0) throw refuse('session-variables', `session variables changed: ${changed.map(([name]) => name.toLowerCase()).join(', ')}`);
      } finally {
        await reference.close();
      }
      return { database: String(database), user: this.agent.user };
    } catch (error) {
      if (error instanceof CheckpointError || error instanceof SandboxError) throw error;
      throw lost(error);
    }
  }

  async schema(database: string): Promise<{ table: string; columns: string[] }[]> {
    const rows = await this.agent.query(
      `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = ${this.agent.escape(database)} ORDER BY table_name, ordinal_position`,
    );
    const tables = new Map<string, string[]>();
    for (const [table, column] of rows) {
      const name = String(table);
      if (!tables.has(name)) tables.set(name, []);
      tables.get(name)!.push(String(column));
    }
    return [...tables].map(([table, columns]) => ({ table, columns }));
  }

  async close(): Promise<void> {
    const spare = this.spare;
    this.spare = undefined;
    await Promise.all([this.agent.close(), this.gold?.connection.close(), spare?.then((c) => c.close()).catch(() => undefined)]);
    this.gold = undefined;
  }
}

/** The server is gone (or refuses the harness): a lost sandbox. */
function lost(cause: unknown): SandboxError {
  const message = cause instanceof Error ? cause.message : String(cause);
  return new SandboxError('SANDBOX_LOST', `The SQL server connection was lost: ${message}`, { cause });
}
