/**
 * Episodes in flight by default on the read-only SQL server (`--parallel` not given): an
 * episode there is a connection pair on one shared server, not a sandbox, and mostly waits on
 * round trips, so more in flight than CPU cores keeps the server busy. Measured on Spider
 * dev 0–199 with golds cached (docs/performance.md, issue 30).
 */
export const SQL_SERVER_PARALLEL = 8;
