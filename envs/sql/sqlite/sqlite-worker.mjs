// One SQLite session (sql.js) in a worker thread, so a statement that never ends can be
// stopped by terminating the thread. Plain JavaScript: Node runs it as is from src and dist.
// Messages in: {id, op: 'use'|'exec'|'schema', ...}; out: {id, ok, value} or {id, ok: false, error}.
import { parentPort, workerData } from 'node:worker_threads';
import initSqlJs from 'sql.js';

const SQL = await initSqlJs();
/** @type {Record<string, Uint8Array>} */
const files = workerData.files;
const readOnly = workerData.readOnly;
let db = null;
let current = null;

function use(name, fresh) {
  if (!(name in files)) return { unknown: true, known: Object.keys(files) };
  if (fresh || current !== name || !db) {
    db?.close();
    db = new SQL.Database(files[name]);
    if (readOnly) db.run('PRAGMA query_only = ON');
    current = name;
  }
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

function exec(sql, maxRows) {
  if (!db) return { kind: 'error', message: 'No database selected', timedOut: false };
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
    while (stmt.step()) {
      if (rows.length >= maxRows) {
        truncated = true;
        break;
      }
      rows.push(stmt.get(null, { useBigInt: true }).map(cell));
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
      message.op === 'use' ? use(message.db, message.fresh) : message.op === 'exec' ? exec(message.sql, message.maxRows) : schema(message.db);
    parentPort.postMessage({ id: message.id, ok: true, value });
  } catch (error) {
    parentPort.postMessage({ id: message.id, ok: false, error: String(error?.message ?? error) });
  }
});
parentPort.postMessage({ ready: true });
