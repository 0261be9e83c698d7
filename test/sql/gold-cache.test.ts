/** The SQL gold cache's verdicts on disk (issue 30): what is stored, what is trusted, what runs again. */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqlGoldCache, sqlGoldStore } from '../../envs/sql/gold-cache.js';
import type { QueryOutcome } from '../../envs/sql/backend.js';
import { bashGoldStore } from '../../envs/bash/gold-cache.js';

const rows = (...values: string[]): QueryOutcome => ({ kind: 'rows', columns: ['x'], rows: values.map((v) => [v]), truncated: false });
/** A gold's run on the harness connection to a fixed-data server, as the SQL env gives it. */
const onServer = (outcome: QueryOutcome) => ({ outcome, ranIn: 'fixed-data-server' as const });
const KEY = { env: 'sql', image: 'img', imageId: 'sha256:1', database: 'db', gold: 'SELECT x FROM t', limits: { timeoutMs: 1, maxRows: 1, maxBytes: 1 } };

describe('SqlGoldCache with a store', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'intercode-sql-gold-cache-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('runs a new gold twice, stores it when both agree; a new cache (process) trusts it without running', async () => {
    let runs = 0;
    const run = async () => (runs++, onServer(rows("'a'")));
    expect(await new SqlGoldCache(sqlGoldStore(dir)).get('k', run, KEY)).toEqual({ outcome: rows("'a'"), cached: false });
    expect(runs).toBe(2);
    expect(await new SqlGoldCache(sqlGoldStore(dir)).get('k', run, KEY)).toEqual({ outcome: rows("'a'"), cached: true });
    expect(runs).toBe(2);
  });

  it('two runs that disagree: stored as unstable, and the gold runs at every score, here and in a new cache', async () => {
    let runs = 0;
    const run = async () => onServer(rows(String(runs++)));
    const cache = new SqlGoldCache(sqlGoldStore(dir));
    expect((await cache.get('k', run, KEY)).outcome).toEqual(rows('1'));
    expect((await cache.get('k', run, KEY)).outcome).toEqual(rows('2'));
    const later = new SqlGoldCache(sqlGoldStore(dir));
    expect(await later.get('k', run, KEY)).toEqual({ outcome: rows('3'), cached: false });
    expect(await later.get('k', run, KEY)).toEqual({ outcome: rows('4'), cached: false });
  });

  it('a gold stopped by its time limit is neither stored nor kept in memory', async () => {
    let runs = 0;
    const run = async () => (runs++, onServer({ kind: 'error', message: 'interrupted', timedOut: true }));
    const cache = new SqlGoldCache(sqlGoldStore(dir));
    await cache.get('k', run, KEY);
    await cache.get('k', run, KEY);
    expect(runs).toBe(2);
    expect(await readdir(dir)).toHaveLength(0);
  });

  it('an entry of a bash store (verified in new sandboxes) under the same key is not a SQL verdict, nor the other way round', async () => {
    await bashGoldStore(dir).put(KEY, { stable: true, outcome: { observation: 'x', changes: [], hashes: new Map() }, verifiedIn: 'new-sandboxes' });
    expect(await sqlGoldStore(dir).get(KEY)).toBeUndefined();
    await sqlGoldStore(dir).put(KEY, { stable: true, outcome: rows("'a'"), verifiedIn: 'fixed-data-server' });
    expect(await bashGoldStore(dir).get(KEY)).toBeUndefined();
    expect(await sqlGoldStore(dir).get(KEY)).toMatchObject({ stable: true, outcome: rows("'a'") });
  });
});
