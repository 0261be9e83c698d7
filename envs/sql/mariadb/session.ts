import type mysql from 'mysql2';
import type { FieldPacket, ResultSetHeader } from 'mysql2';
import { SandboxError } from '../../../src/errors.js';
import type { ExecuteLimits, QueryOutcome, SqlSession } from '../backend.js';
import { DatabaseNotFoundError } from '../errors.js';
import type { PyRepr } from '../python-repr.js';
import { converterFor } from './convert.js';
import { withUnsortedGroups } from './group-order.js';
import type { MariaDbServer } from './server.js';

/** MySQL error numbers this session tells apart. */
const ER_QUERY_INTERRUPTED = 1317;

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
   * Runs `sql` with MySQL 8's unsorted GROUP BY (see group-order.ts). When the rewritten
   * statement fails, the original runs instead, so the agent sees the server's own error
   * for the text it sent.
   */
  async execute(sql: string, limits: ExecuteLimits): Promise<QueryOutcome> {
    const unsorted = withUnsortedGroups(sql);
    if (unsorted === null) return this.run(sql, limits);
    const outcome = await this.run(unsorted, limits);
    return outcome.kind === 'error' && !outcome.timedOut ? this.run(sql, limits) : outcome;
  }

  private run(sql: string, limits: ExecuteLimits): Promise<QueryOutcome> {
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
          resolve({ kind: 'error', message: `Query execution was interrupted (time limit of ${limits.timeoutMs / 1000} s exceeded)`, timedOut: true });
          return;
        }
        if (failure && !(truncated && failure.errno === ER_QUERY_INTERRUPTED)) {
          resolve({ kind: 'error', message: failure.message, timedOut: false });
          return;
        }
        if (!fields) {
          resolve({ kind: 'ok', affectedRows: header?.affectedRows ?? 0 });
          return;
        }
        const converters = fields.map(converterFor);
        const rows: PyRepr[][] = raw.map((row) => row.map((cell, i) => converters[i]!(cell)));
        resolve({ kind: 'rows', columns: fields.map((f) => f.name), rows, truncated });
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
