import type { Task } from '../../src/datasets/index.js';
import type { ResetOptions, ResetResult } from '../../src/env/types.js';
import type { EpisodeState, SandboxEnvConfig } from '../../src/env/sandbox-env-types.js';
import { SandboxEnv } from '../../src/env/sandbox-env.js';
import type { Score, StepOptions, StepResult } from '../../src/env/types.js';
import { EnvStateError } from '../../src/errors.js';
import type { CommandRunner } from '../../src/sandbox/shell/types.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import { PythonScorer } from './python-scorer.js';
import { PythonObserver } from './python-observer.js';
import type { EpisodeCheckpoint, ReplayedEpisodeState, ReplayObserver, SandboxEpisodeState } from '../../src/env/checkpoint/index.js';
import { DEFAULT_PYTHON_SESSION_OPTIONS, PythonSession, type PythonSessionOptions } from './python-session.js';
import { goldEntry, toPythonTask, type EntryRule, type PythonTask } from './python-task.js';
import { appsReward, mbppReward, type PythonReward } from './reward.js';

export interface PythonEnvConfig extends SandboxEnvConfig {
  session?: Partial<PythonSessionOptions>;
  /** Time limit of each test (default 5 s). */
  testTimeoutMs?: number;
  /** Which gold function a submission is bound to (default `tested`). */
  entryRule?: EntryRule;
  /**
   * The interpreter after a score: `keep` (default; tests run in child processes, so
   * scoring changes nothing) or `gold-state` (InterCode: the gold's namespace, as its
   * scoring reset the interpreter and loaded the gold) — for replaying its logs.
   */
  afterScore?: 'keep' | 'gold-state';
  /** The dataset's file, for error messages about its records. */
  dataFile?: string;
}

/** APPS submissions name a function that reads stdin and prints; `submit` alone means this one. */
export const APPS_DEFAULT_FUNCTION = 'main';

const SUBMIT = /^submit(?:\s+(\S+))?\s*$/;

/**
 * MBPP/APPS-style function tasks in a persistent Python interpreter. `submit <function>`
 * scores that function against the task's tests (bare `submit`: the gold's function name
 * for MBPP, `main` for APPS) and ends the episode.
 */
export class PythonEnv extends SandboxEnv {
  readonly id = 'intercode/python-v1';
  readonly logName = 'ic_python';
  override readonly sharesWorkspaces = true;
  private submission: string | undefined;
  private readonly parsed = new WeakMap<Task, PythonTask>();
  /** Scores in a new sandbox of the same image, out of the agent's reach. */
  private readonly scorer: PythonScorer;

  constructor(protected override readonly config: PythonEnvConfig) {
    super(config);
    for (const task of config.dataset ?? []) this.pythonTask(task);
    this.scorer = new PythonScorer(config.runtime, config.spec, config.session?.memoryBytes ?? DEFAULT_PYTHON_SESSION_OPTIONS.memoryBytes);
  }

  /** Starts a new episode; the sandbox its score will run in is made while the agent works. */
  override async reset(options: ResetOptions = {}): Promise<ResetResult> {
    const result = await super.reset(options);
    if (result.info.task) this.scorer.prepare();
    return result;
  }

  override async close(): Promise<void> {
    await super.close();
    await this.scorer.close();
  }

  /**
   * Continues a checkpoint's episode here: its actions replayed into a new sandbox and proven
   * equal (see {@link replayObserver}); the sandbox its score will run in is made meanwhile.
   */
  override async restore(checkpoint: EpisodeCheckpoint<SandboxEpisodeState | ReplayedEpisodeState>): Promise<void> {
    await super.restore(checkpoint);
    if (this.currentTask) this.scorer.prepare();
  }

  /**
   * The interpreter's state cannot be copied: a checkpoint holds the episode's actions and
   * what a {@link PythonObserver} saw (the globals' canonical reprs, the actions the
   * interpreter ran, the written files); a restore replays the actions and compares.
   */
  protected override replayObserver(): ReplayObserver {
    return this.observer as ReplayObserver;
  }

  private readonly observer = new PythonObserver();

  /** The function a `peekScore(submission)` named: what a later bare `submit` scores. */
  protected override envEpisodeState(): Record<string, unknown> {
    return this.submission === undefined ? {} : { submission: this.submission };
  }

  protected override resumeEnvEpisodeState(state: Readonly<Record<string, unknown>>): void {
    this.submission = typeof state.submission === 'string' ? state.submission : undefined;
  }

  protected override sibling(): PythonEnv {
    return new PythonEnv(this.config);
  }

  protected openRunner(sandbox: Sandbox): Promise<CommandRunner> {
    return PythonSession.open(sandbox, this.config.session);
  }

  override async step(action: string, options?: StepOptions): Promise<StepResult> {
    const submit = SUBMIT.exec(action.trim());
    if (!submit) return super.step(action, options);
    this.submission = submit[1];
    return super.step('submit');
  }

  /** The reward of submitting `submission` (a function name) now; the episode goes on. */
  override async peekScore(submission?: string): Promise<Score> {
    this.submission = submission;
    return super.peekScore();
  }

  /** The task's tests and gold as a {@link PythonTask}. @throws DatasetError */
  pythonTask(task: Task): PythonTask {
    let parsed = this.parsed.get(task);
    if (!parsed) {
      parsed = toPythonTask(task, this.config.dataFile ?? 'the dataset');
      this.parsed.set(task, parsed);
    }
    return parsed;
  }

  /** What bare `submit` submits for `task`. */
  defaultSubmission(task: Task): string {
    const python = this.pythonTask(task);
    return python.kind === 'apps' ? APPS_DEFAULT_FUNCTION : goldEntry(python, this.config.entryRule ?? 'tested')!;
  }

  protected async score(episode: EpisodeState): Promise<Score> {
    const session = episode.runner;
    if (!(session instanceof PythonSession)) throw new EnvStateError('score() needs the episode\'s Python session');
    const python = this.pythonTask(episode.task);
    const submitted = this.submission ?? this.defaultSubmission(episode.task);
    const testTimeoutMs = this.config.testTimeoutMs ?? 5_000;
    let result: PythonReward;
    let entry: string | undefined;
    if (python.kind === 'apps') {
      const reply = await this.scorer.score({ kind: 'apps', submitted, cases: python.cases, testTimeoutMs }, session.history);
      result = appsReward(python.cases, 'results' in reply ? reply.results : []);
    } else {
      entry = goldEntry(python, this.config.entryRule ?? 'tested')!;
      const reply = await this.scorer.score({ kind: 'mbpp', entry, submitted, setup: python.setup, gold: python.gold, tests: python.tests, testTimeoutMs }, session.history);
      result = 'pred' in reply ? mbppReward(python.tests, reply.pred, reply.gold) : mbppReward(python.tests, [], []);
      // InterCode's scoring reset the interpreter and loaded the gold: its logs were made so.
      if (this.config.afterScore === 'gold-state') await session.load([python.setup, python.gold], testTimeoutMs);
    }
    const summary = result.verdicts
      .map((v) => (v.passed ? `PASS ${v.test}` : `FAIL ${v.test}\n     got: ${v.got}\n     expected: ${v.expected}`))
      .join('\n');
    return {
      reward: result.reward,
      parts: { passed: result.passed, tests: result.total },
      details: { style: python.kind, submitted, ...(entry ? { entry } : {}), verdicts: result.verdicts, eval_obs: summary },
    };
  }
}
