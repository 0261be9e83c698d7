import { goldText, type Task } from '../../src/datasets/index.js';
import type { ResetOptions, ResetResult, Score, StepInfo, StepResult, TaskEnv } from '../../src/env/types.js';
import { CheckpointError, EnvStateError, SandboxError } from '../../src/errors.js';
import { toIntercodeLog, writeEpisodeLog } from '../../src/trajectory/index.js';
import type { ExecuteLimits, QueryOutcome, SqlBackend, SqlSession, SqlSessionState } from './backend.js';
import { CheckpointStore, forkEpisode, type EpisodeCheckpoint } from '../../src/env/checkpoint.js';
import type { SqlGoldCache } from './gold-cache.js';
import type { GoldKey } from '../../src/golds/gold-store.js';
import type { GoldRun } from '../../src/golds/gold-verifier.js';
import { pyStr, pyTuple, type PyRepr } from './python-repr.js';
import { hasTopLevelOrderBy, sqlReward, type SqlRewardOptions } from './reward.js';
import { isRepeatableRead, isSessionNeutral } from './statement-kind.js';
import { chooseTask, endStep, seededRandom, skippedScore } from '../../src/env/episode.js';

export interface SqlEnvConfig {
  backend: SqlBackend;
  /** Tasks, each naming its database in `db`; empty: tool mode (no query, submit scores 0). */
  dataset: readonly Task[];
  limits: ExecuteLimits;
  /** InterCode's "handicap" runs: the first observation also lists the tables and their columns. */
  handicap: boolean;
  /** The reward's order term: `intercode` (default, as published), `gold-order-by` or `none`. */
  order: SqlRewardOptions['order'];
  /** Shared gold results, used while the session is untouched (see {@link SqlBackend}). */
  goldCache?: SqlGoldCache;
  /** The server image (tag and id) that the gold cache's disk entries are keyed by; without it, golds are kept in memory only. */
  goldStoreImage?: { tag: string; id: string | null };
  /** Database for tasks without `db` (and for tool mode). */
  defaultDatabase?: string;
  /** Called once when the env closes (after its session is closed): releases a shared backend. */
  release?: () => Promise<void>;
  /** Called when a fork makes another env on the backend (it calls `release` when it closes). */
  retain?: () => void;
  trajectoryDir?: string;
  seed?: number;
}

/**
 * How statements run and rows convert (mariadb/session.ts, convert.ts, group-order.ts), as a
 * gold's disk key holds it: bump it when they change, so results stored before are not trusted.
 */
const SQL_EXECUTION = 1;

/** How golds are verified, recorded in every score: by the harness, outside the agent's session. */
const GOLD_VERIFIED_BY = 'harness-session';

/** Step info plus the statement's outcome (rows as Python reprs, or the error). */
export interface SqlStepInfo extends StepInfo {
  result?: QueryOutcome;
}

export interface SqlStepResult extends StepResult {
  info: SqlStepInfo;
}

/** Each result's rows as `str(row)`, made once per result: a cached gold result is scored many times. */
const rowStringsOf = new WeakMap<readonly PyRepr[][], string[]>();
function rowStrings(rows: readonly PyRepr[][]): string[] {
  let strings = rowStringsOf.get(rows);
  if (!strings) rowStringsOf.set(rows, (strings = rows.map(pyTuple)));
  return strings;
}

/**
 * A gold's rows as InterCode's reward compares them. InterCode: a gold that fails leaves an
 * empty result; a statement without rows compares as []. A gold stopped by the time limit
 * has no result (InterCode waited for it): it matches nothing (null), or an agent that holds a
 * lock the gold waits for would score an empty answer 1.0. So does one not run (notRun).
 */
export function goldRowsOf(outcome: QueryOutcome): string[] | null {
  if (outcome.kind === 'rows') return rowStrings(outcome.rows);
  return outcome.kind === 'error' && (outcome.timedOut || outcome.notRun === true) ? null : [];
}

/** InterCode's observation for an outcome: `str(rows)`, or `Error executing query: …`. */
export function renderOutcome(outcome: QueryOutcome): string {
  switch (outcome.kind) {
    case 'rows': {
      const text = `[${rowStrings(outcome.rows).join(', ')}]`;
      if (outcome.truncated === 'rows') return `${text}\n[intercode: only the first ${outcome.rows.length} rows are shown; the query was stopped there]`;
      if (outcome.truncated === 'bytes') return `${text}\n[intercode: only the first ${outcome.rows.length} rows are shown (the result passed the byte limit); the query was stopped there]`;
      return text;
    }
    case 'ok':
      return `[intercode: the statement returned no rows (${outcome.affectedRows} rows affected)]`;
    case 'error':
      return `Error executing query: ${outcome.message}`;
  }
}

/** The handicap text InterCode's evaluation gave the agent: each table with `str(list_of_columns)`. */
export function handicapText(tables: readonly { table: string; columns: readonly string[] }[]): string {
  return `MySQL tables, with their properties\n${tables.map((t) => `- ${t.table}: [${t.columns.map(pyStr).join(', ')}]\n`).join('')}`;
}

/** The task's own table list (InterCode's `db_tables`: name → columns), when it has one. */
function taskTables(task: Task): { table: string; columns: string[] }[] | undefined {
  const tables = task.metadata.db_tables;
  if (!tables || typeof tables !== 'object' || Array.isArray(tables)) return undefined;
  return Object.entries(tables as Record<string, unknown>).map(([table, columns]) => ({
    table,
    columns: Array.isArray(columns) ? columns.map(String) : [],
  }));
}

/** An SQL episode saved by {@link SqlEnv.checkpoint}: the bookkeeping, and the session's database. */
export interface SqlEpisodeState {
  /** The backend's identity (what data it serves) and whether its data is fixed (read-only): a restore needs the same. */
  readonly backend: string;
  readonly dataFixed: boolean;
  readonly task: Task | null;
  readonly steps: readonly { action: string; observation: string }[];
  readonly last: QueryOutcome | null;
  readonly lastObservation: string;
  readonly touched: boolean;
  readonly session: SqlSessionState;
}

/** What an SQLite checkpoint does not carry (listed in its `info.dropped.shellValues`). */
export const SQLITE_VALUES_NOT_CARRIED: readonly string[] = [
  'last_insert_rowid(), changes() and total_changes() (a restored connection starts them over)',
  'data_version (per connection)',
  'the random() sequence',
];

/**
 * SQL tasks as episodes over a {@link SqlBackend}: `reset` selects the task's database,
 * an action is one SQL statement, `submit` scores the last result against the gold
 * query's with InterCode's reward. The session is kept across resets while the episode
 * ran only session-neutral reads; otherwise it starts fresh (and in writable mode, on
 * fresh data).
 */
export class SqlEnv implements TaskEnv {
  readonly id = 'intercode/sql-v1';
  private session: SqlSession | undefined;
  private task: Task | null = null;
  private steps: { action: string; observation: string }[] = [];
  private last: QueryOutcome | null = null;
  private lastObservation = '';
  /** The session may differ from a fresh one on the task's database. */
  private touched = false;
  private ended = true;
  private closed = false;
  private readonly random: () => number;
  /** This env's checkpoints (released when it closes). */
  private readonly checkpoints = new CheckpointStore();

  constructor(private readonly config: SqlEnvConfig) {
    this.random = seededRandom(config.seed ?? Date.now());
  }

  get tasks(): readonly Task[] {
    return this.config.dataset;
  }

  /** The backend this env's sessions come from (shared with the other envs made with it). */
  get backend(): SqlBackend {
    return this.config.backend;
  }

  /** Each statement's time, row and byte limits. */
  get limits(): ExecuteLimits {
    return this.config.limits;
  }

  /** The reward's order term. */
  get order(): SqlRewardOptions['order'] {
    return this.config.order;
  }


  /** The gold's result on the backend's original data, in a new session (see {@link untouchedGoldOutcome}). */
  originalGoldOutcome(task: Task): Promise<QueryOutcome> {
    return this.untouchedGoldOutcome(task, goldText(task));
  }

  async reset(options: ResetOptions = {}): Promise<ResetResult> {
    if (this.closed) throw new EnvStateError('reset() called after close()');
    this.task = chooseTask(options, this.config.dataset, this.random);
    this.session ??= await this.config.backend.openSession();
    this.ended = true;
    const database = this.databaseFor(this.task);
    if (database !== undefined) await this.session.useDatabase(database, this.touched);
    this.touched = false;
    this.steps = [];
    this.last = null;
    let observation = this.task?.query ?? '';
    if (this.config.handicap && this.task && database !== undefined) {
      const tables = taskTables(this.task) ?? (await this.session.schema(database));
      observation = `${observation}\n\n${handicapText(tables)}`;
    }
    this.lastObservation = observation;
    this.ended = false;
    return { observation, info: { task: this.task } };
  }

  async step(action: string): Promise<SqlStepResult> {
    if (!this.session) throw new EnvStateError('step() called before reset()');
    if (this.ended) throw new EnvStateError('step() called after the episode ended; call reset()');
    const verb = action.trim();
    try {
      if (verb === 'submit' || verb === 'skip') return await this.finish(verb);
      const started = performance.now();
      if (!isSessionNeutral(action)) this.touched = true;
      const outcome = await this.session.execute(action, this.config.limits);
      const observation = renderOutcome(outcome);
      this.steps.push({ action, observation });
      this.last = outcome;
      this.lastObservation = observation;
      const timedOut = outcome.kind === 'error' && outcome.timedOut;
      return {
        observation,
        reward: 0,
        terminated: false,
        truncated: false,
        info: {
          actionExecuted: outcome.kind !== 'error',
          exitCode: outcome.kind === 'error' ? 1 : 0,
          durationMs: performance.now() - started,
          events: timedOut ? [{ kind: 'timed-out', afterMs: this.config.limits.timeoutMs }] : [],
          result: outcome,
        },
      };
    } catch (error) {
      if (!(error instanceof SandboxError)) throw error;
      return this.lose(error);
    }
  }

  async peekScore(): Promise<Score> {
    if (!this.session || !this.task) throw new EnvStateError('peekScore() needs a reset() with a task');
    return this.score(this.task);
  }

  /**
   * Saves the episode as it stands: its task, steps, last result, and its session's database
   * (writable mode: the data's bytes — SQLite's database, MariaDB's dump — held in memory;
   * read-only mode: only its name). The episode goes on (see {@link SQLITE_VALUES_NOT_CARRIED}
   * and the backend's `notCarried`).
   * @throws EnvStateError without a live episode; CheckpointError CHECKPOINT_UNSUPPORTED for a
   *   backend whose sessions cannot be saved, CHECKPOINT_REFUSED for a session state
   *   not carried exactly (a PRAGMA run, temporary objects, an attached database, an open transaction;
   *   MariaDB's reasons in docs/fork.md).
   */
  async checkpoint(): Promise<EpisodeCheckpoint<SqlEpisodeState>> {
    const session = this.session;
    if (!session || this.ended) throw new EnvStateError('checkpoint() needs an episode under way: call reset()');
    if (!session.saveState || !this.config.backend.openSessionFrom) throw new CheckpointError('CHECKPOINT_UNSUPPORTED', `the ${this.config.backend.identity} backend cannot save a session`);
    const started = performance.now();
    const saved = await session.saveState();
    const { id } = this.checkpoints.allocate();
    return this.checkpoints.add({
      id,
      envId: this.id,
      info: {
        steps: this.steps.length,
        layer: { paths: 0, bytes: 0, archiveBytes: 0 },
        dropped: { processes: [], shellValues: saved.notCarried ?? SQLITE_VALUES_NOT_CARRIED },
        durationMs: performance.now() - started,
        database: { bytes: saved.data?.byteLength ?? 0 },
      },
      state: { backend: this.config.backend.identity, dataFixed: this.config.backend.dataFixed, task: this.task, steps: [...this.steps], last: this.last, lastObservation: this.lastObservation, touched: this.touched, session: saved },
    });
  }

  /**
   * Continues the episode `checkpoint` saved, in this env (or another SQL env on a backend
   * serving the same data): a new session on its database, and its bookkeeping. The current
   * episode, if any, is dropped.
   * @throws EnvStateError for a released checkpoint or one of another env kind; CheckpointError
   *   CHECKPOINT_REFUSED when this env's backend serves other data (reason `other-data`) or
   *   is writable where the checkpoint's was read-only or the reverse (`other-mode`: golds
   *   would be run on other data than the agent's).
   */
  async restore(checkpoint: EpisodeCheckpoint<SqlEpisodeState>): Promise<void> {
    if (this.closed) throw new EnvStateError('restore() called after close()');
    this.checkpoints.requireLive(checkpoint);
    if (checkpoint.envId !== this.id) throw new EnvStateError(`checkpoint ${checkpoint.id} is of ${checkpoint.envId}, not ${this.id}`);
    const { backend } = this.config;
    const state = checkpoint.state;
    if (state.backend !== backend.identity) {
      throw new CheckpointError('CHECKPOINT_REFUSED', `the checkpoint's data is ${state.backend}'s, not ${backend.identity}'s`, { details: { reason: 'other-data', backend: state.backend, expected: backend.identity } });
    }
    if (state.dataFixed !== backend.dataFixed) {
      const mode = (fixed: boolean) => (fixed ? 'read-only' : 'writable');
      throw new CheckpointError('CHECKPOINT_REFUSED', `the checkpoint is of a ${mode(state.dataFixed)} session; this env's backend is ${mode(backend.dataFixed)}`, { details: { reason: 'other-mode' } });
    }
    if (!backend.openSessionFrom) throw new CheckpointError('CHECKPOINT_UNSUPPORTED', `the ${backend.identity} backend cannot restore a session`);
    const session = await backend.openSessionFrom(state.session);
    const previous = this.session;
    this.session = session;
    await previous?.close().catch(() => undefined);
    this.task = state.task;
    this.steps = [...state.steps];
    this.last = state.last;
    this.lastObservation = state.lastObservation;
    this.touched = state.touched;
    this.ended = false;
  }

  /** Forgets `checkpoint` (a restore of it then fails). Idempotent. */
  releaseCheckpoint(checkpoint: EpisodeCheckpoint): void {
    this.checkpoints.release(checkpoint);
  }

  /**
   * `n` independent episodes continuing this one from now, each an env on the same backend
   * with a session of its own; this episode goes on. The caller closes them. All or none.
   * @throws as {@link checkpoint} and {@link restore}.
   */
  fork(n: number): Promise<SqlEnv[]> {
    return forkEpisode(this, n, () => {
      this.config.retain?.();
      return new SqlEnv(this.config);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.ended = true;
    this.checkpoints.close();
    const session = this.session;
    this.session = undefined;
    await session?.close().catch(() => undefined);
    await this.config.release?.();
  }

  /** The database `task` is played on (its `db`, else the env's default); undefined when neither names one. */
  databaseFor(task: Task | null): string | undefined {
    const db = task?.metadata.db;
    return typeof db === 'string' && db !== '' ? db : this.config.defaultDatabase;
  }

  private async finish(verb: 'submit' | 'skip'): Promise<SqlStepResult> {
    const score = verb === 'submit' && this.task ? await this.score(this.task) : skippedScore(verb);
    this.ended = true;
    await this.writeLog(score.reward, { ...score.details, reward: score.reward });
    return endStep(this.lastObservation, score);
  }

  private async score(task: Task): Promise<Score> {
    const gold = goldText(task);
    const agentChangedData = this.touched && !this.config.backend.dataFixed;
    const { outcome: goldOutcome, cached } = await this.goldOutcome(task, gold);
    // A gold that fails only on the data the agent changed (a table it dropped or renamed) matches
    // nothing too (see goldRowsOf): else the agent could make the gold fail and answer with nothing.
    const failedOnAgentData =
      goldOutcome.kind === 'error' && !goldOutcome.timedOut && agentChangedData && (await this.untouchedGoldOutcome(task, gold)).kind !== 'error';
    const goldRows = failedOnAgentData ? null : goldRowsOf(goldOutcome);
    const agentRows = this.last?.kind === 'rows' ? rowStrings(this.last.rows) : null;
    const result = sqlReward(agentRows, goldRows, { order: this.config.order, goldOrdered: hasTopLevelOrderBy(gold) });
    return {
      reward: result.reward,
      parts: { iou: result.iou, ...(result.kendallTau === null ? {} : { kendall_tau: result.kendallTau }) },
      details: {
        agent_obs: this.last ? this.lastObservation : null,
        eval_obs: goldOutcome.kind === 'rows' ? `[${goldRows!.join(', ')}]` : renderOutcome(goldOutcome),
        corrupt_gold: goldOutcome.kind === 'error' && !failedOnAgentData,
        ...(failedOnAgentData ? { gold_failed_on_agent_changes: true } : {}),
        gold_cached: cached,
        gold_verified_by: GOLD_VERIFIED_BY,
      },
    };
  }

  /**
   * The gold's result, run by the harness outside the agent's session ({@link SqlSession.verify});
   * from the shared cache when that provably gives the same: a repeatable read on data no
   * session can change, or on data this episode has not touched.
   */
  private goldOutcome(task: Task, gold: string): Promise<{ outcome: QueryOutcome; cached: boolean }> {
    const session = this.session!;
    const run = () => {
      // Writable embedded SQLite runs it in the agent's own connection (see SqlSession.verify).
      if (!this.config.backend.dataFixed && !isSessionNeutral(gold)) this.touched = true;
      return session.verify(gold, this.config.limits);
    };
    const cache = this.config.goldCache;
    if (!cache || (this.touched && !this.config.backend.dataFixed) || !isRepeatableRead(gold)) {
      return run().then((outcome) => ({ outcome, cached: false }));
    }
    const database = this.databaseFor(task) ?? '';
    return cache.get(this.goldCacheKey(database, gold), () => run().then((outcome) => this.goldRun(outcome)), this.goldDiskKey(database, gold));
  }

  /**
   * The gold's result on the backend's original data: in a session of its own that has run
   * nothing (the backend's invariant), closed after; from the shared cache where that holds it.
   */
  private async untouchedGoldOutcome(task: Task, gold: string): Promise<QueryOutcome> {
    const database = this.databaseFor(task);
    const run = async () => {
      const session = await this.config.backend.openSession();
      try {
        if (database !== undefined) await session.useDatabase(database, false);
        return await session.verify(gold, this.config.limits);
      } finally {
        await session.close().catch(() => undefined);
      }
    };
    const cache = this.config.goldCache;
    if (!cache || !isRepeatableRead(gold)) return run();
    return (await cache.get(this.goldCacheKey(database ?? '', gold), () => run().then((outcome) => this.goldRun(outcome)), this.goldDiskKey(database ?? '', gold))).outcome;
  }

  /** A gold's run, as the cache keeps it: on a backend whose data no session changes, it ran where a new server's would. */
  private goldRun(outcome: QueryOutcome): GoldRun<QueryOutcome> {
    return this.config.backend.dataFixed ? { outcome, ranIn: 'fixed-data-server' } : { outcome };
  }

  /** The shared cache's key of `gold`'s result on `database`'s original data. */
  private goldCacheKey(database: string, gold: string): string {
    return `${this.config.backend.identity}\0${database}\0${gold}`;
  }

  /**
   * Everything a gold's result on the read-only server depends on: the image (its data and
   * server), the database, the gold's text, the limits, and how statements are run
   * ({@link SQL_EXECUTION}); undefined when golds are not kept on disk.
   */
  private goldDiskKey(database: string, gold: string): GoldKey | undefined {
    const image = this.config.goldStoreImage;
    if (!image || !this.config.backend.dataFixed) return undefined;
    const { timeoutMs, maxRows, maxBytes } = this.config.limits;
    return { env: 'sql', execution: SQL_EXECUTION, image: image.tag, imageId: image.id, database, gold, limits: { timeoutMs, maxRows, maxBytes } };
  }

  private async lose(error: SandboxError): Promise<SqlStepResult> {
    this.ended = true;
    const session = this.session;
    this.session = undefined;
    await session?.close().catch(() => undefined);
    await this.writeLog(null, { truncated: error.message });
    return {
      observation: `[intercode: the SQL backend was lost: ${error.message}]`,
      reward: 0,
      terminated: false,
      truncated: true,
      info: { actionExecuted: false, exitCode: null, durationMs: 0, events: [], truncation: { reason: 'sandbox-lost', message: error.message } },
    };
  }

  private async writeLog(reward: number | null, info: Record<string, unknown>): Promise<void> {
    if (!this.config.trajectoryDir || !this.task) return;
    const log = toIntercodeLog({ environment: 'ic_sql', task: this.task, steps: this.steps, reward, info });
    await writeEpisodeLog(this.config.trajectoryDir, log);
  }
}
