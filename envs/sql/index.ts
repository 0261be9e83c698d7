import { readFile } from 'node:fs/promises';
import { loadDataset } from '../../src/datasets/index.js';
import type { EnvSpec } from '../../src/env/registry.js';
import { ConfigError } from '../../src/errors.js';
import type { BuildLog } from '../../src/images/image-builder.js';
import { packagePath } from '../../src/package-path.js';
import { EngineSet } from '../../src/sandbox/backends/engine-set.js';
import type { SqlBackend } from './backend.js';
import { SqlGoldCache, sqlGoldStore } from './gold-cache.js';
import type { SqlRewardOptions } from './reward.js';
import { builtinDump, ensureSqlImage, readDumps } from './server-image.js';
import { SqliteBackend } from './sqlite/sqlite-backend.js';
import { SqlEnv } from './sql-env.js';

export { SqlEnv, type SqlEnvConfig, type SqlStepResult, type SqlStepInfo } from './sql-env.js';
export { renderOutcome, handicapText } from './outcome-text.js';
export { sqlReward, hasTopLevelOrderBy, type ScoredRows, type SqlRewardOptions, type SqlRewardResult } from './reward.js';
export { kendallTauB } from './kendall.js';
export { SqlGoldCache, sqlGoldStore, SQL_OUTCOME_CODEC } from './gold-cache.js';
export { SqliteBackend } from './sqlite/sqlite-backend.js';
export { ensureSqlImage, builtinDump, readDumps } from './server-image.js';
export { DatabaseNotFoundError, DumpLoadError } from './errors.js';
export type { SqlBackend, SqlSession, QueryOutcome, ExecuteLimits } from './backend.js';

/** The project's own SQL tasks, over the built-in `library` database. */
export const BUILTIN_SQL_TASKS = packagePath('datasets', 'sql', 'tasks.json');
export const BUILTIN_SQL_SCRIPT = packagePath('datasets', 'sql', 'library.sql');

export interface SqlEnvOptions {
  /** Task file (InterCode JSON, JSONL, CSV, TSV), each task naming its database in `db`. Default: built-in. `null`: tool mode. */
  data: string | null;
  /** SQL dumps the server image loads, in order (default: the built-in database). */
  dumps: readonly string[];
  /** SQLite files: use the embedded backend (no Docker) instead of the server. */
  sqlite: readonly string[];
  /** The embedded backend over the built-in database (no Docker). */
  embedded: boolean;
  /** Writable mode: the agent may change data; each episode's changes are private and gone at reset. */
  writable: boolean;
  handicap: boolean;
  order: SqlRewardOptions['order'];
  timeoutMs: number;
  maxRows: number;
  /** Bytes of cell text kept from one result (not a CLI flag; tests lower it). */
  maxBytes: number;
  /** MariaDB writable mode: the largest dump a checkpoint holds (default 256 MiB; a larger one is refused, `too-large`). Not a CLI flag; tests lower it. */
  maxCheckpointBytes: number;
  /** Database for tasks without `db` and for tool mode. */
  defaultDatabase: string;
  seed: number;
  /** Cache gold results (default true): in memory, and on disk under {@link goldCacheDir}. false: every score runs the gold. */
  goldCache: boolean;
  /**
   * Where gold results verified on the read-only server (two runs agreed) are kept, keyed by
   * the image (tag and id), database, gold and limits, so later runs trust them without running
   * them (see SqlGoldCache). Default: none (memory only); the CLI gives defaultGoldCacheDir().
   */
  goldCacheDir: string;
  /**
   * The Docker engine(s) the server runs on. Default: DOCKER_HOST or the local socket.
   * Several only with `writable` (a server per session, spread over them); read-only mode
   * runs one server that every episode shares.
   */
  engines: EngineSet;
  buildLog: BuildLog;
}

/** Per statement: time limit, rows kept, and bytes of cell text kept (1 MiB; see ExecuteLimits.maxBytes). */
export const DEFAULT_SQL_LIMITS = { timeoutMs: 10_000, maxRows: 10_000, maxBytes: 1024 ** 2 } as const;

/**
 * The backend the options ask for: embedded SQLite, or a server image with the dumps loaded.
 * @throws ConfigError for several engines in read-only mode.
 */
async function openBackend(options: Partial<SqlEnvOptions>): Promise<{ backend: SqlBackend; image?: { tag: string; id: string | null } }> {
  const writable = options.writable ?? false;
  if (options.sqlite?.length) return { backend: await SqliteBackend.fromFiles(options.sqlite, writable) };
  if (options.embedded) return { backend: await SqliteBackend.fromScripts(new Map([['library', await readFile(BUILTIN_SQL_SCRIPT, 'utf8')]]), writable) };
  const engines = options.engines ?? EngineSet.local();
  if (engines.several && !writable) {
    throw new ConfigError(
      '--engine',
      `names ${engines.targets.length} engines, but the read-only SQL env runs one MariaDB server that every episode shares: ` +
        'it cannot be spread; give one --engine, or --writable (a server per session, spread over the engines)',
    );
  }
  const dumps = options.dumps?.length ? await readDumps(options.dumps) : [await builtinDump()];
  const image = await ensureSqlImage(engines, dumps, options.buildLog ?? (() => undefined));
  const server = { runtime: await engines.runtime(), image };
  // The MariaDB client library is slow to load: only an env on a server pays for it.
  const { PrivateServerBackend, SharedServerBackend } = await import('./mariadb/backends.js');
  if (writable) return { backend: new PrivateServerBackend({ ...server, ...(options.maxCheckpointBytes ? { maxCheckpointBytes: options.maxCheckpointBytes } : {}) }) };
  const [backend, id] = await Promise.all([SharedServerBackend.start(server), engines.imageId(image)]);
  return { backend, image: { tag: image, id: id ?? null } };
}

/**
 * `count` envs on one backend (one server, or one set of SQLite files) with one gold
 * cache; the backend stops when the last env closes.
 * @throws DumpLoadError (a dump failed to load), DatasetError (bad task file or SQLite file), ImageError, SandboxError.
 */
export async function createSqlEnvs(options: Partial<SqlEnvOptions>, count: number): Promise<SqlEnv[]> {
  const dataset = options.data === null ? [] : await loadDataset(options.data ?? BUILTIN_SQL_TASKS);
  const { backend, image } = await openBackend(options);
  let open = count;
  const release = async () => {
    if (--open === 0) await backend.close();
  };
  const retain = () => {
    open += 1;
  };
  // Golds go to disk only from the read-only server: its data is fixed by the image (tag and id).
  const store = image && options.goldCacheDir && options.goldCache !== false ? sqlGoldStore(options.goldCacheDir) : undefined;
  const goldCache = options.goldCache === false ? undefined : new SqlGoldCache(store);
  return Array.from(
    { length: count },
    (_, i) =>
      new SqlEnv({
        backend,
        dataset,
        limits: {
          timeoutMs: options.timeoutMs ?? DEFAULT_SQL_LIMITS.timeoutMs,
          maxRows: options.maxRows ?? DEFAULT_SQL_LIMITS.maxRows,
          maxBytes: options.maxBytes ?? DEFAULT_SQL_LIMITS.maxBytes,
        },
        handicap: options.handicap ?? false,
        order: options.order ?? 'intercode',
        ...(goldCache ? { goldCache } : {}),
        ...(store && image ? { goldStoreImage: image } : {}),
        release,
        retain,
        ...(options.defaultDatabase ? { defaultDatabase: options.defaultDatabase } : options.data === undefined ? { defaultDatabase: 'library' } : {}),
        ...(options.seed !== undefined ? { seed: options.seed + i } : {}),
      }),
  );
}

/** One env (its own backend). */
export async function createSqlEnv(options: Partial<SqlEnvOptions> = {}): Promise<SqlEnv> {
  return (await createSqlEnvs(options, 1))[0]!;
}

export const sqlEnvSpec: EnvSpec<SqlEnvOptions> = {
  id: 'intercode/sql-v1',
  description: 'Text-to-SQL tasks (Spider, WikiSQL, your own) over MariaDB in a sandbox or embedded SQLite; InterCode SQL reward',
  create: createSqlEnv,
};
