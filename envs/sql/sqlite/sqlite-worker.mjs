// One SQLite session (sql.js) in a worker thread, so a statement that never ends can be
// stopped by terminating the thread. Plain JavaScript: Node runs it as is from src and dist.
// Messages in: {id, op: 'use'|'exec'|'verify'|'verify-copy'|'schema'|'save'|'load', ...}; out: {id, ok, value} or {id, ok: false, error}.
import { parentPort, workerData } from 'node:worker_threads';
import initSqlJs from 'sql.js';

const SQL = await initSqlJs();
/** @type {Record<string, Uint8Array>} */
const files = workerData.files;
const readOnly = workerData.readOnly;
let db = null;
let current = null;
/** The agent ran a PRAGMA on this connection: state a checkpoint cannot read back (case_sensitive_like is write-only). */
let pragmaRan = false;

/**
 * SQLite's own memory (this thread's WebAssembly heap) is capped: a statement that builds a
 * huge value (`zeroblob(1e9)`, `repeat`) fails with "out of memory" instead of growing the
 * process. PRAGMA hard_heap_limit can only lower the cap, never raise it, and it holds for
 * every connection of the thread, so no statement can undo it.
 */
function capHeap(handle) {
  handle.run(`PRAGMA hard_heap_limit = ${Number(workerData.heapLimitBytes)}`);
}

function use(name, fresh) {
  if (!(name in files)) return { unknown: true, known: Object.keys(files) };
  if (fresh || current !== name || !db) {
    db?.close();
    db = new SQL.Database(files[name]);
    capHeap(db);
    current = name;
    pragmaRan = false;
  }
  return { unknown: false };
}

/**
 * The connection's state for a checkpoint: its database's name and bytes (read-only mode:
 * none, the data cannot have changed), or why it cannot be carried exactly: a PRAGMA the
 * agent ran, temporary objects, an attached database, an open transaction (none of them is
 * in the main database's bytes). sql.js's `export()` copies the database with SQLite's backup
 * API (the connection stays open and unchanged); the copy's header gets a new schema cookie
 * (the backup's), so the connection's is written back into it (bytes 40–43): a restored
 * connection reads the same `schema_version`.
 */
function save() {
  if (!db) return { refused: 'no-database' };
  if (pragmaRan) return { refused: 'pragma' };
  const objects = connectionObjects();
  if (objects) return { refused: objects };
  if (inTransaction()) return { refused: 'open-transaction' };
  if (readOnly) return { database: current, data: null };
  const cookie = Number(db.exec('PRAGMA schema_version')[0].values[0][0]);
  const data = db.export();
  new DataView(data.buffer, data.byteOffset, data.byteLength).setUint32(40, cookie);
  return { database: current, data };
}

/** What the connection holds beyond the main database: `temp-objects`, `attached-database`, or undefined. */
function connectionObjects() {
  if (Number(db.exec('SELECT count(*) FROM temp.sqlite_schema')[0].values[0][0]) > 0) return 'temp-objects';
  if (db.exec('PRAGMA database_list')[0].values.some(([, name]) => name !== 'main' && name !== 'temp')) return 'attached-database';
  return undefined;
}

/** Whether the connection has a transaction open (a BEGIN fails; when it succeeds it is rolled back at once). */
function inTransaction() {
  try {
    db.run('BEGIN');
  } catch {
    return true;
  }
  db.run('ROLLBACK');
  return false;
}

/** A new connection on `name`'s data as a checkpoint saved it (`data`), or as the backend has it (null). */
function load(name, data) {
  if (!(name in files)) return { unknown: true, known: Object.keys(files) };
  db?.close();
  db = new SQL.Database(data ?? files[name]);
  capHeap(db);
  current = name;
  pragmaRan = false;
  return { unknown: false };
}

/** Cells as tagged values; the main thread renders them (python-repr.ts). */
function cell(v) {
  if (v === null || v === undefined) return { t: 'none' };
  if (typeof v === 'bigint') return { t: 'int', v: v.toString() };
  if (typeof v === 'number') return { t: 'float', v };
  if (typeof v === 'string') return { t: 'str', v };
  return { t: 'bytes', v };
}

/** A cell's size as the byte cap counts it: UTF-8 bytes of text, bytes of a blob, 8 for a number. */
function cellBytes(v) {
  if (typeof v === 'string') return Buffer.byteLength(v, 'utf8');
  if (v instanceof Uint8Array) return v.byteLength;
  return 8;
}

/** The harness's own handles (golds), one per database, opened on first use; no agent statement runs on them. */
const pristine = new Map();

function verify(name, sql, maxRows, maxBytes) {
  if (!(name in files)) return { kind: 'error', message: `Unknown database '${name}'`, timedOut: false };
  let handle = pristine.get(name);
  if (!handle) {
    handle = new SQL.Database(files[name]);
    capHeap(handle);
    pristine.set(name, handle);
  }
  return execOn(handle, sql, maxRows, maxBytes);
}

/**
 * Writable mode's gold: on a new connection over a copy of the agent's database as it stands
 * (SQLite's backup API: the agent's connection stays open and unchanged), so that what lives
 * only in the agent's connection — temporary tables, views and triggers (which shadow the
 * main database's names), PRAGMA settings, an attached database — never reaches the gold.
 */
function verifyCopy(sql, maxRows, maxBytes) {
  if (!db) return { kind: 'error', message: 'No database selected', timedOut: false };
  if (inTransaction()) {
    // SQLite copies no database with a transaction open. The gold then runs in the agent's
    // connection only where nothing of the connection's own can reach it: no PRAGMA run, no
    // temporary object, no attached database; else it runs nowhere and matches nothing.
    if (pragmaRan || connectionObjects()) return { kind: 'error', message: "The gold was not run: the agent's connection holds a transaction and state of its own (a PRAGMA, temporary objects or an attached database)", timedOut: false, notRun: true };
    return execOn(db, sql, maxRows, maxBytes);
  }
  const copy = new SQL.Database(db.export());
  try {
    capHeap(copy);
    return execOn(copy, sql, maxRows, maxBytes);
  } finally {
    copy.close();
  }
}

function exec(sql, maxRows, maxBytes) {
  if (!db) return { kind: 'error', message: 'No database selected', timedOut: false };
  // Conservative: any statement naming PRAGMA (pragma_* table functions are other words).
  if (/\bPRAGMA\b/i.test(sql)) pragmaRan = true;
  return execOn(db, sql, maxRows, maxBytes);
}

function execOn(db, sql, maxRows, maxBytes) {
  // Read-only is set again before every statement: one action is one statement, so a
  // `PRAGMA query_only = 0` in one action never covers a write in the next.
  if (readOnly) db.run('PRAGMA query_only = ON');
  let stmt;
  try {
    const statements = db.iterateStatements(sql);
    const first = statements.next();
    if (first.done) return { kind: 'error', message: 'Query was empty', timedOut: false };
    stmt = first.value;
    // Like MySQL without multi-statements: one statement per action (a trailing ';' is fine).
    const rest = statements.getRemainingSQL().replace(/\s+|;|--[^\n]*|\/\*[\s\S]*?\*\//g, '');
    if (rest !== '') {
      stmt.free();
      return { kind: 'error', message: 'Only one statement can run at a time', timedOut: false };
    }
  } catch (error) {
    return { kind: 'error', message: String(error.message ?? error), timedOut: false };
  }
  try {
    const columns = stmt.getColumnNames();
    const rows = [];
    let truncated = false;
    let bytes = 0;
    while (stmt.step()) {
      if (rows.length >= maxRows) {
        truncated = 'rows';
        break;
      }
      const values = stmt.get(null, { useBigInt: true });
      for (const v of values) bytes += cellBytes(v);
      if (bytes > maxBytes) {
        truncated = 'bytes';
        break;
      }
      rows.push(values.map(cell));
    }
    if (columns.length === 0) return { kind: 'ok', affectedRows: db.getRowsModified() };
    return { kind: 'rows', columns, rows, truncated };
  } catch (error) {
    return { kind: 'error', message: String(error.message ?? error), timedOut: false };
  } finally {
    stmt.free();
  }
}

function schema(name) {
  const scratch = new SQL.Database(files[name]);
  capHeap(scratch);
  try {
    const tables = scratch.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")[0]?.values ?? [];
    return tables.map(([table]) => ({
      table,
      columns: (scratch.exec(`SELECT name FROM pragma_table_info('${String(table).replace(/'/g, "''")}')`)[0]?.values ?? []).map(([c]) => String(c)),
    }));
  } finally {
    scratch.close();
  }
}

parentPort.on('message', (message) => {
  try {
    const value =
      message.op === 'use'
        ? use(message.db, message.fresh)
        : message.op === 'exec'
          ? exec(message.sql, message.maxRows, message.maxBytes)
          : message.op === 'verify'
            ? verify(message.db, message.sql, message.maxRows, message.maxBytes)
            : message.op === 'verify-copy'
              ? verifyCopy(message.sql, message.maxRows, message.maxBytes)
            : message.op === 'save'
              ? save()
              : message.op === 'load'
                ? load(message.db, message.data)
                : schema(message.db);
    parentPort.postMessage({ id: message.id, ok: true, value });
  } catch (error) {
    parentPort.postMessage({ id: message.id, ok: false, error: String(error?.message ?? error) });
  }
});
parentPort.postMessage({ ready: true });
