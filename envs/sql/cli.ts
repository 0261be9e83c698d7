import type { Command } from 'commander';
import type { CommonEnvFlags, CreateEnvsOptions, EnvCli } from '../../src/cli/env-cli.js';
import { positiveInteger, timeoutMs } from '../../src/cli/env-cli.js';
import { ConfigError } from '../../src/errors.js';
import { createSqlEnvs } from './index.js';
import { SQL_SERVER_PARALLEL } from './parallel.js';
import { goldText } from '../../src/datasets/index.js';
import { defaultGoldCacheDir } from '../../src/golds/index.js';

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

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** The SQL environment's CLI flags and env construction. */
export const sqlCli: EnvCli = {
  name: 'sql',
  // --no-gold-cache and --gold-cache-dir are added by the bash env (one option per name) and apply here too.
  flagNames: ['dump', 'sqlite', 'embedded', 'writable', 'handicap', 'order', 'maxRows', 'database', 'goldCache', 'goldCacheDir'],
  addFlags(command: Command): void {
    command
      .option('--dump <file>', 'sql: a SQL dump the server image loads at build time (repeatable, loaded in order; default: the built-in database)', collect)
      .option('--sqlite <file>', 'sql: a SQLite file for the embedded backend, no Docker (repeatable; the database is named after the file)', collect)
      .option('--embedded', 'sql: the built-in database on the embedded SQLite backend (no Docker)')
      .option('--writable', 'sql: the agent may change data; each episode gets private state, thrown away at reset (default: read-only)')
      .option('--handicap', "sql: the first observation also lists the database's tables and columns (InterCode's handicap runs)")
      .option('--order <mode>', 'sql: the reward\'s order term: intercode (always, as published; default), gold-order-by (only when the gold sorts) or none (IoU alone, as InterCode\'s handicap and ReAct logs were scored)')
      .option('--max-rows <n>', 'sql: rows kept from one result (default 10000)')
      .option('--database <name>', 'sql: database for tasks without a "db" field, and for --tool');
  },
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
        ...(flags.trajectories ? { trajectoryDir: flags.trajectories } : {}),
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
  reactCommand: intercodeSqlReactCommand,
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
