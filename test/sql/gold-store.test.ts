/**
 * Issue 30: SQL gold results verified once (two runs on the harness connection that agree)
 * and kept on disk, keyed by the server image (tag and id), the database, the gold and the
 * limits; a later process (a new server) trusts them without running the gold. Against the
 * real MariaDB server in Docker.
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Task } from '../../src/datasets/index.js';
import { createSqlEnvs, type SqlEnv, type SqlEnvOptions } from '../../envs/sql/index.js';
import { dockerTestFile, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { builtinSqlImage } from '../setup/sql-image.js';

const { testRun, engine } = await dockerTestFile();

const task = (gold: string): Task => ({ index: 0, id: 'adhoc', query: 'q', gold, metadata: { db: 'library' } });
const TITLES = task('SELECT title FROM book ORDER BY title');

/** One episode in a new env set (a new server): the agent's action, then submit; the score's reward and details. */
async function episode(options: Partial<SqlEnvOptions>, t: Task, action: string): Promise<{ reward: number; cached: unknown; evalObs: unknown }> {
  const [env] = (await createSqlEnvs(options, 1)) as [SqlEnv];
  try {
    await env.reset({ task: t });
    await env.step(action);
    const end = await env.step('submit');
    return { reward: end.reward, cached: end.info.score?.details?.gold_cached, evalObs: end.info.score?.details?.eval_obs };
  } finally {
    await env.close();
  }
}

describe.skipIf(skipWithoutEngine(engine, 'SQL gold store on MariaDB'))('SQL golds on disk: MariaDB (Docker)', () => {
  let dir: string;
  beforeAll(async () => {
    requireEngine(engine);
    dir = await mkdtemp(join(tmpdir(), 'intercode-sql-golds-'));
    await builtinSqlImage(testRun);
  }, 900_000);
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('a gold verified by one process is trusted by the next (a new server), with the same reward', async () => {
    const first = await episode({ goldCacheDir: dir }, TITLES, 'SELECT title FROM book ORDER BY title');
    expect(first).toMatchObject({ reward: 1, cached: false });
    expect(await readdir(dir)).toHaveLength(1);
    const second = await episode({ goldCacheDir: dir }, TITLES, 'SELECT title FROM book ORDER BY title');
    expect(second).toEqual({ ...first, cached: true });
    const wrong = await episode({ goldCacheDir: dir }, TITLES, 'SELECT title FROM book WHERE 1 = 0');
    expect(wrong).toMatchObject({ reward: 0, cached: true });
  }, 120_000);

  it('an entry changed on disk under another key, or from another image, is not trusted: the gold runs again', async () => {
    const t = task('SELECT COUNT(*) FROM book');
    await episode({ goldCacheDir: dir }, t, 'SELECT 1');
    const names = await readdir(dir);
    // A forged entry: the file of this gold, holding an outcome that says the answer is [(1,)]
    // but the key of another image (as an entry copied from elsewhere would).
    for (const name of names) {
      const entry = JSON.parse(await readFile(join(dir, name), 'utf8')) as { key: { gold: string; imageId: string }; outcome: unknown };
      if (entry.key.gold !== t.gold) continue;
      entry.key.imageId = 'sha256:another';
      entry.outcome = { kind: 'rows', columns: ['COUNT(*)'], rows: [['1']], truncated: false };
      await writeFile(join(dir, name), JSON.stringify(entry));
    }
    const played = await episode({ goldCacheDir: dir }, t, 'SELECT 1');
    expect(played).toMatchObject({ reward: 0, cached: false });
  }, 120_000);

  it('different limits are a different entry (a result cut at 1 row is not the full one)', async () => {
    const t = task('SELECT title FROM book');
    const full = await episode({ goldCacheDir: dir }, t, 'SELECT title FROM book');
    expect(full).toMatchObject({ reward: 1, cached: false });
    const capped = await episode({ goldCacheDir: dir, maxRows: 1 }, t, 'SELECT title FROM book');
    expect(capped.cached).toBe(false);
    expect(capped.evalObs).not.toEqual(full.evalObs);
  }, 120_000);

  it('--no-gold-cache: nothing is read or written', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'intercode-sql-golds-'));
    try {
      const played = await episode({ goldCache: false, goldCacheDir: empty }, TITLES, 'SELECT title FROM book ORDER BY title');
      expect(played).toMatchObject({ reward: 1, cached: false });
      expect(await readdir(empty)).toHaveLength(0);
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  }, 120_000);
});
