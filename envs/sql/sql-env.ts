import { goldText, type Task } from '../../src/datasets/index.js';
import type { ResetOptions, ResetResult, Score, StepInfo, StepResult } from '../../src/env/types.js';
import type { EpisodeRecordingEnv } from '../../src/env/episode-log-writer.js';
import { EnvStateError, SandboxError } from '../../src/errors.js';
import type { ExecuteLimits, QueryOutcome, SqlBackend, SqlSession } from './backend.js';
import { EpisodeCheckpoints, forkEpisode, type EpisodeCheckpoint } from '../../src/env/checkpoint/index.js';
import { EpisodeLedger, type EndedEpisode, type EpisodeSnapshot } from '../../src/env/episode-ledger.js';
import { truncatedStep } from '../../src/env/truncation.js';
import { SqlCheckpointer, type SqlSessionPart } from './sql-checkpointer.js';
import type { SqlGoldCache } from './gold-cache.js';
import { SqlGoldRuns } from './gold-runs.js';
import { goldRowsOf, handicapText, renderOutcome, rowStrings, taskTables } from './outcome-text.js';
import { hasTopLevelOrderBy, sqlReward, type SqlRewardOptions } from './reward.js';
import { isSessionNeutral } from './statement-kind.js';
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
  seed?: number;
}

/** How golds are verified, recorded in every score: by the harness, outside the agent's session. */
const GOLD_VERIFIED_BY = 'harness-session';

/** Step info plus the statement's outcome (rows as Python reprs, or the error). */
export interface SqlStepInfo extends StepInfo {
  result?: QueryOutcome;
}

export interface SqlStepResult extends StepResult {
  info: SqlStepInfo;
}

/** What an SQL episode keeps besides its ledger: the last result (what submit scores) and whether the session was touched. */
interface SqlEpisodeKept extends EpisodeSnapshot {
  readonly last: QueryOutcome | null;
  readonly touched: boolean;
}

/** An SQL episode saved by {@link SqlEnv.checkpoint}: the bookkeeping, and the session's database. */
export type SqlEpisodeState = SqlEpisodeKept & SqlSessionPart;

/**
 * SQL tasks as episodes over a {@link SqlBackend}: `reset` selects the task's database,
 * an action is one SQL statement, `submit` scores the last result against the gold
 * query's with InterCode's reward. The session is kept across resets while the episode
 * ran only session-neutral reads; otherwise it starts fresh (and in writable mode, on
 * fresh data).
 */
export class SqlEnv implements EpisodeRecordingEnv {
  readonly id = 'intercode/sql-v1';
  readonly logName = 'ic_sql';
  private session: SqlSession | undefined;
  private readonly ledger: EpisodeLedger;
  private last: QueryOutcome | null = null;
  /** The session may differ from a fresh one on the task's database. */
  private touched = false;
  private closed = false;
  private readonly random: () => number;
  private readonly checkpoints = new EpisodeCheckpoints(() => this.id);
  private readonly checkpointer: SqlCheckpointer;
  private readonly golds: SqlGoldRuns;

  constructor(private readonly config: SqlEnvConfig) {
    this.random = seededRandom(config.seed ?? Date.now());
    this.ledger = new EpisodeLedger();
    this.checkpointer = new SqlCheckpointer(config.backend);
    this.golds = new SqlGoldRuns(config);
  }

  get tasks(): readonly Task[] {
    return this.config.dataset;
  }

  /** How the last episode ended, from its last step until the next reset (what EpisodeLogWriter writes). */
  endedEpisode(): EndedEpisode | undefined {
    return this.ledger.endedEpisode;
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
    return this.golds.untouched(this.databaseFor(task), goldText(task));
  }

  async reset(options: ResetOptions = {}): Promise<ResetResult> {
    if (this.closed) throw new EnvStateError('reset() called after close()');
    const task = chooseTask(options, this.config.dataset, this.random);
    this.session ??= await this.config.backend.openSession();
    this.ledger.stop();
    const database = this.databaseFor(task);
    if (database !== undefined) await this.session.useDatabase(database, this.touched);
    this.touched = false;
    this.last = null;
    let observation = task?.query ?? '';
    if (this.config.handicap && task && database !== undefined) {
      const tables = taskTables(task) ?? (await this.session.schema(database));
      observation = `${observation}\n\n${handicapText(tables)}`;
    }
    this.ledger.begin(task, observation);
    return { observation, info: { task } };
  }

  async step(action: string): Promise<SqlStepResult> {
    if (!this.session) throw new EnvStateError('step() called before reset()');
    if (this.ledger.ended) throw new EnvStateError('step() called after the episode ended; call reset()');
    const verb = action.trim();
    try {
      if (verb === 'submit' || verb === 'skip') return await this.finish(verb);
      const started = performance.now();
      if (!isSessionNeutral(action)) this.touched = true;
      const outcome = await this.session.execute(action, this.config.limits);
      const observation = renderOutcome(outcome);
      this.ledger.record(action, observation);
      this.last = outcome;
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
    const task = this.ledger.task;
    if (!this.session || !task) throw new EnvStateError('peekScore() needs a reset() with a task');
    return this.score(task);
  }

  /**
   * Saves the episode as it stands: its record, last result, and its session's database (see
   * {@link SqlCheckpointer}); the episode goes on.
   * @throws EnvStateError without a live episode; CheckpointError as SqlCheckpointer.save.
   */
  async checkpoint(): Promise<EpisodeCheckpoint<SqlEpisodeState>> {
    const session = this.session;
    if (!session || this.ledger.ended) throw new EnvStateError('checkpoint() needs an episode under way: call reset()');
    return this.checkpoints.save(this.checkpointer, session, { ...this.ledger.snapshot(), last: this.last, touched: this.touched });
  }

  /**
   * Continues the episode `checkpoint` saved, in this env (or another SQL env on a backend
   * serving the same data): a new session on its database, and its bookkeeping. The current
   * episode, if any, is dropped.
   * @throws EnvStateError for a released checkpoint or one of another env kind; CheckpointError as SqlCheckpointer.load.
   */
  async restore(checkpoint: EpisodeCheckpoint<SqlEpisodeState>): Promise<void> {
    if (this.closed) throw new EnvStateError('restore() called after close()');
    const state = this.checkpoints.stateOf(checkpoint);
    const session = await this.checkpointer.load(state);
    const previous = this.session;
    this.session = session;
    await previous?.close().catch(() => undefined);
    this.ledger.continueFrom(state);
    this.last = state.last;
    this.touched = state.touched;
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
    this.ledger.stop();
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
    const task = this.ledger.task;
    const score = verb === 'submit' && task ? await this.score(task) : skippedScore(verb);
    this.ledger.end(score.reward, { ...score.details, reward: score.reward });
    return endStep(this.ledger.lastObservation, score);
  }

  private async score(task: Task): Promise<Score> {
    const gold = goldText(task);
    const agentChangedData = this.touched && !this.config.backend.dataFixed;
    const database = this.databaseFor(task);
    const { outcome: goldOutcome, cached } = await this.golds.inSession(this.session!, database, gold, { touched: () => this.touched, touch: () => (this.touched = true) });
    // A gold that fails only on the data the agent changed (a table it dropped or renamed) matches
    // nothing too (see goldRowsOf): else the agent could make the gold fail and answer with nothing.
    const failedOnAgentData =
      goldOutcome.kind === 'error' && !goldOutcome.timedOut && agentChangedData && (await this.golds.untouched(database, gold)).kind !== 'error';
    const goldRows = failedOnAgentData ? null : goldRowsOf(goldOutcome);
    const agentRows = this.last?.kind === 'rows' ? rowStrings(this.last.rows) : null;
    const result = sqlReward(agentRows, goldRows, { order: this.config.order, goldOrdered: hasTopLevelOrderBy(gold) });
    return {
      reward: result.reward,
      parts: { iou: result.iou, ...(result.kendallTau === null ? {} : { kendall_tau: result.kendallTau }) },
      details: {
        agent_obs: this.last ? this.ledger.lastObservation : null,
        eval_obs: goldOutcome.kind === 'rows' ? `[${goldRows!.join(', ')}]` : renderOutcome(goldOutcome),
        corrupt_gold: goldOutcome.kind === 'error' && !failedOnAgentData,
        ...(failedOnAgentData ? { gold_failed_on_agent_changes: true } : {}),
        gold_cached: cached,
        gold_verified_by: GOLD_VERIFIED_BY,
      },
    };
  }

  private async lose(error: SandboxError): Promise<SqlStepResult> {
    const session = this.session;
    this.session = undefined;
    await session?.close().catch(() => undefined);
    this.ledger.end(null, { truncated: error.message });
    return truncatedStep({ observation: `[intercode: the SQL backend was lost: ${error.message}]`, truncation: { reason: 'sandbox-lost', message: error.message } });
  }
}
