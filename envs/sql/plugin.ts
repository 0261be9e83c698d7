import { SUBMIT_AS_IS } from '../../src/agents/index.js';
import { goldText } from '../../src/datasets/index.js';
import { positiveInteger, timeoutMs } from '../../src/env/flag-values.js';
import { ConfigError } from '../../src/errors.js';
import { firstDistinct, MAX_DERIVED } from '../exploration.js';
import { GOLD_CACHE_FLAGS } from '../gold-cache-flags.js';
import type { CommonEnvFlags, CreateEnvsOptions, EnvPlugin } from '../plugin.js';
import { BUILTIN_SQL_TASKS, createSqlEnvs, sqlEnvSpec } from './index.js';
import { SQL_SERVER_PARALLEL } from './parallel.js';
import { defaultGoldCacheDir } from '../../src/golds/index.js';
import { SQL_PROMPT } from './prompt.js';
import { sqlHarborTask } from './harbor-export.js';
import { sqlDataRecipe } from './images.js';
import { builtinDump } from './server-image.js';
import type { SqlEnv } from './sql-env.js';

interface SqlFlags extends CommonEnvFlags {
  dump?: string[];
  sqlite?: string[];
  embedded?: boolean;
  writable?: boolean;
  handicap?: boolean;
  order?: string;
  maxRows?: string;
  database?: string;
  tool?: boolean;
  goldCache?: boolean;
  goldCacheDir?: string;
}

/** A table name alone on a line (`| users |`, `users`) or in a Python tuple (`('users',)`). */
const TABLE_NAME = /^\|?\s*([A-Za-z_]\w*)\s*\|?$|\('([A-Za-z_]\w*)',?\)/gm;

/** The SQL environment. */
export const sqlPlugin: EnvPlugin = {
  name: 'sql',
  builtInTasks: BUILTIN_SQL_TASKS,
  spec: sqlEnvSpec,
  flags: [
    { flags: '--dump <file>', description: 'sql: a SQL dump the server image loads at build time (repeatable, loaded in order; default: the built-in database)', repeatable: true },
    { flags: '--sqlite <file>', description: 'sql: a SQLite file for the embedded backend, no Docker (repeatable; the database is named after the file)', repeatable: true },
    { flags: '--embedded', description: 'sql: the built-in database on the embedded SQLite backend (no Docker)' },
    { flags: '--writable', description: 'sql: the agent may change data; each episode gets private state, thrown away at reset (default: read-only)' },
    { flags: '--handicap', description: "sql: the first observation also lists the database's tables and columns (InterCode's handicap runs)" },
    {
      flags: '--order <mode>',
      description: 'sql: the reward\'s order term: intercode (always, as published; default), gold-order-by (only when the gold sorts) or none (IoU alone, as InterCode\'s handicap and ReAct logs were scored)',
    },
    { flags: '--max-rows <n>', description: 'sql: rows kept from one result (default 10000)' },
    { flags: '--database <name>', description: 'sql: database for tasks without a "db" field, and for --tool' },
    ...GOLD_CACHE_FLAGS,
  ],
  async createEnvs(flags: SqlFlags, count: number, { log, engines }: CreateEnvsOptions) {
    const order = flags.order ?? 'intercode';
    if (order !== 'intercode' && order !== 'gold-order-by' && order !== 'none') throw new ConfigError('--order', `must be intercode, gold-order-by or none, got "${order}"`);
    if (flags.sqlite?.length && flags.dump?.length) throw new ConfigError('--sqlite', 'and --dump choose different backends; give one of them');
    if (flags.goldCache === false && flags.goldCacheDir !== undefined) throw new ConfigError('--gold-cache-dir', 'cannot go with --no-gold-cache');
    const timeout = timeoutMs(flags.timeout);
    return createSqlEnvs(
      {
        ...(flags.tool ? { data: null } : flags.data ? { data: flags.data } : {}),
        ...(flags.dump ? { dumps: flags.dump } : {}),
        ...(flags.sqlite ? { sqlite: flags.sqlite } : {}),
        embedded: flags.embedded ?? false,
        writable: flags.writable ?? false,
        handicap: flags.handicap ?? false,
        order,
        ...(timeout ? { timeoutMs: timeout } : {}),
        ...(flags.maxRows ? { maxRows: positiveInteger('--max-rows', flags.maxRows) } : {}),
        ...(flags.database ? { defaultDatabase: flags.database } : {}),
        goldCache: flags.goldCache ?? true,
        ...(flags.goldCache === false ? {} : { goldCacheDir: flags.goldCacheDir ?? defaultGoldCacheDir() }),
        buildLog: log,
        engines,
      },
      count,
    );
  },
  // The read-only server only: embedded SQLite runs in this process, and --writable starts a server per env.
  defaultParallel: (flags: SqlFlags) => (flags.sqlite?.length || flags.embedded || flags.writable ? undefined : SQL_SERVER_PARALLEL),
  goldActions: (task) => [goldText(task), 'submit'],
  agent: { prompt: SQL_PROMPT, stepScoring: SUBMIT_AS_IS, reactCommand: intercodeSqlReactCommand },
  training: {
    exploration: {
      fixed: ['SHOW TABLES'],
      fromObservation: (obs) => firstDistinct([...obs.matchAll(TABLE_NAME)].map((m) => (m[1] ?? m[2])!), MAX_DERIVED).map((t) => `DESCRIBE ${t}`),
    },
  },
  images: {
    list: () => [
      {
        name: 'sql',
        usedBy: 'the MariaDB backend over the built-in database (--embedded and --sqlite need none; each set of --dump files gets its own, on first use)',
        byDefault: true,
        // Loading the built-in database takes ~7 s; another dump's time depends on its size.
        recipe: async () => ({ ...(await sqlDataRecipe([await builtinDump()])), typicalBuildSeconds: 7 }),
      },
    ],
  },
  harbor: { task: (env, task) => sqlHarborTask(env as SqlEnv, task) },
};

/**
 * InterCode's ReAct SQL parser: the text between the first `execute[` and the last `]`
 * (anything after, like a hallucinated "\nObservation 5", is dropped), cut at the first ";".
 * An action without `execute[…]` is returned as it is.
 */
export function intercodeSqlReactCommand(action: string): string {
  const match = /execute\[([\s\S]*)\]/.exec(action);
  if (!match) return action;
  const command = match[1]!;
  const semicolon = command.indexOf(';');
  return semicolon === -1 ? command : command.slice(0, semicolon);
}
