import type mysql from 'mysql2';
import type { FieldPacket, ResultSetHeader } from 'mysql2';
import { SandboxError } from '../../../src/errors.js';
import type { ExecuteLimits, QueryOutcome, SqlSession } from '../backend.js';
import { DatabaseNotFoundError } from '../errors.js';
import type { PyRepr } from '../python-repr.js';
import { converterFor } from './convert.js';
import { sortsRows, withUnsortedGroups } from './group-order.js';
import type { MariaDbServer } from './server.js';

/** MySQL error numbers this session tells apart. */
const ER_QUERY_INTERRUPTED = 1317;
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

/** A mysql2 connection to a {@link MariaDbServer}: one episode's session. */
export class MariaDbSession implements SqlSession {
  private currentDatabase: string | undefined;

  constructor(
    private readonly server: MariaDbServer,
    private connection: mysql.Connection,
  ) {}

  static async open(server: MariaDbServer): Promise<MariaDbSession> {
    return new MariaDbSession(server, await server.connect());
  }

  /**
   * Runs `sql` as MySQL 8 would: groups unsorted (see group-order.ts), and MySQL 8's
   * ONLY_FULL_GROUP_BY where MariaDB can tell it (see {@link MariaDbSession.runAsMysql8});
   * and ties in a sort broken the same way every run ({@link STABLE_TIES}).
   * When the rewritten statement fails, the original runs instead, so the agent sees the
   * server's own error for the text it sent.
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

  /** One statement; `errno` is the server's error number when it failed. */
  private run(sql: string, limits: ExecuteLimits): Promise<{ outcome: QueryOutcome; errno?: number }> {
    return new Promise((resolve, reject) => {
      let fields: FieldPacket[] | undefined;
      let header: ResultSetHeader | undefined;
      const raw: unknown[][] = [];
      let truncated = false;
      let timedOut = false;
      let failure: (Error & { errno?: number; fatal?: boolean }) | undefined;
      const query = this.connection.query({ sql, rowsAsArray: true });
      const timer = setTimeout(() => {
        timedOut = true;
        this.server.killQuery(this.connection.threadId!);
      }, limits.timeoutMs);
      query.on('fields', (f: FieldPacket[] | undefined) => {
        if (f && !fields) fields = f;
      });
      query.on('result', (row: unknown, index: number) => {
        if (index > 0) return; // a later result set (CALL): InterCode's cursor kept the first
        if (!Array.isArray(row)) {
          header ??= row as ResultSetHeader;
          return;
        }
        if (raw.length < limits.maxRows) raw.push(row);
        else if (!truncated) {
          truncated = true;
          this.server.killQuery(this.connection.threadId!);
        }
      });
      query.on('error', (error: Error) => {
        failure = error;
      });
      query.on('end', () => {
        clearTimeout(timer);
        if (failure?.fatal) {
          reject(new SandboxError('SANDBOX_LOST', `The SQL server connection was lost: ${failure.message}`, { cause: failure }));
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

  private query(sql: string): Promise<unknown[][]> {
    return new Promise((resolve, reject) => {
      this.connection.query({ sql, rowsAsArray: true }, (error, rows) => (error ? reject(error) : resolve(rows as unknown[][])));
    });
  }

  async useDatabase(database: string, fresh: boolean): Promise<void> {
    if (!fresh && this.currentDatabase === database) return;
    if (fresh) {
      // COM_RESET_CONNECTION clears variables, temporary tables and prepared statements.
      await new Promise<void>((resolve, reject) => this.connection.reset((error: Error | null) => (error ? reject(error) : resolve())));
    }
    this.currentDatabase = undefined;
    try {
      await this.query(`USE ${quoteIdentifier(database)}`);
    } catch (error) {
      if ((error as { fatal?: boolean }).fatal) throw new SandboxError('SANDBOX_LOST', `The SQL server connection was lost: ${(error as Error).message}`, { cause: error });
      const known = (await this.query('SHOW DATABASES')).map((r) => String(r[0])).filter((d) => d !== 'information_schema');
      throw new DatabaseNotFoundError(database, known);
    }
    this.currentDatabase = database;
  }

  async schema(database: string): Promise<{ table: string; columns: string[] }[]> {
    const rows = await this.query(
      `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = ${this.connection.escape(database)} ORDER BY table_name, ordinal_position`,
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
    await new Promise<void>((resolve) => this.connection.end(() => resolve()));
  }
}
