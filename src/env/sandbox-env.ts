import type { Task } from '../datasets/index.js';
import { CheckpointError, EnvStateError } from '../errors.js';
import { FreshWorkspaces } from '../pool/fresh-workspaces.js';
import type { Workspace, WorkspaceFactory, WorkspaceSource } from '../pool/types.js';
import { WorkspaceLease } from '../pool/workspace-lease.js';
import { sandboxWorkspaces } from '../pool/workspace-factory.js';
import type { ShellSession } from '../sandbox/shell/shell-session.js';
import { renderObservation, type CommandRunner } from '../sandbox/shell/types.js';
import type { Sandbox, SandboxSpec } from '../sandbox/types.js';
import { DEFAULT_LAYER_LIMITS, forkEpisode, otherImage, SandboxCheckpoints, type EpisodeCheckpoint, type ReplayObserver, type SandboxCheckpoint } from './checkpoint/index.js';
import { chooseTask, endStep, seededRandom, skippedScore } from './episode.js';
import { EpisodeLedger, type EndedEpisode } from './episode-ledger.js';
import type { EpisodeState, SandboxEnvConfig } from './sandbox-env-types.js';
import { diskLimitEvent, failedStepEnd, overDiskEnd, SCORER_SHELL_BREACHED, truncatedStep, untrustedEnd, type CutOff } from './truncation.js';
import type { EpisodeRecordingEnv } from './episode-log-writer.js';
import type { ResetOptions, ResetResult, Score, StepOptions, StepResult } from './types.js';

/**
 * An episode in a clean sandbox: `reset` takes a workspace from its source (a new sandbox of
 * the env's image, or a warm pool's: {@link useWorkspaces}), so nothing of the previous
 * episode is left; `step` runs an action, `submit` scores and ends, `skip` ends with 0. An
 * episode that cannot be trusted or lost its sandbox is cut off, never scored (truncation.ts).
 * Checkpoints: checkpoint/. Subclasses supply the runner and the scorer.
 */
export abstract class SandboxEnv implements EpisodeRecordingEnv {
  abstract readonly id: string;
  /**
   * Whether this env's episodes may take workspaces from a pool shared with other envs: its
   * workspaces do not depend on the task (what does goes in at {@link prepareEpisode}) and it
   * keeps nothing of its own about the runner. Not so for bash's `--reset intercode`.
   */
  readonly sharesWorkspaces: boolean = false;
  private readonly lease: WorkspaceLease;
  private readonly ledger = new EpisodeLedger();
  private readonly random: () => number;
  /** The scorer shell's breach count when the episode began (see ShellSession.violations). */
  private controlViolationsAtReset = 0;
  /** Where a restore may lay a checkpoint over a ready workspace: the warm pool of the env that forked this one (see {@link fork}). */
  private spares: WorkspaceSource | undefined;
  private readonly checkpoints: SandboxCheckpoints;

  /** The image this env's sandboxes start from (its tag): what an exported task directory builds on. */
  get image(): string {
    return this.config.spec.image;
  }

  constructor(protected readonly config: SandboxEnvConfig) {
    this.random = seededRandom(config.seed ?? Date.now());
    this.lease = new WorkspaceLease(new FreshWorkspaces(this.workspaceFactory()));
    const env = this;
    this.checkpoints = new SandboxCheckpoints({
      get envId() { return env.id; }, // a subclass sets its id after this constructor
      runtime: config.runtime,
      limits: config.checkpointLimits ?? DEFAULT_LAYER_LIMITS,
      image: config.spec.image,
      source: () => this.lease.source,
      spares: () => this.spares ?? this.lease.source,
      openRunner: (sandbox) => this.openRunner(sandbox),
      prepare: (workspace, task) => this.prepareEpisode(workspace, task),
      replayObserver: () => this.replayObserver(),
      requireRestorable: (spec, task) => this.checkRestorable(spec, task),
    });
  }

  /** How this env makes a workspace: a sandbox from its spec (or `spec`: an env whose tasks have images of their own) with its runner open. */
  workspaceFactory(spec: SandboxSpec = this.config.spec): WorkspaceFactory {
    return sandboxWorkspaces(this.config.runtime, spec, { open: (sandbox) => this.openRunner(sandbox), resume: (sandbox) => this.resumeRunner(sandbox) });
  }

  /** The agent's shell an earlier process handed over in an adopted `sandbox`, when this env's runner is such a shell; default: none. */
  protected async resumeRunner(_sandbox: Sandbox): Promise<ShellSession | undefined> {
    return undefined;
  }

  /** Takes workspaces from `source` (a warm pool shared by several envs, say) from the next reset on; `close()` closes it only if `own`. */
  useWorkspaces(source: WorkspaceSource, { own = false }: { own?: boolean } = {}): void {
    this.lease.use(source, own);
  }

  /**
   * What an env puts in a workspace per task, at reset (CTF: the task's files). Set-up that
   * does not depend on the task belongs in {@link openRunner}, which a pool runs ahead of time.
   */
  protected async prepareEpisode(_workspace: Workspace, _task: Task | null): Promise<void> {}

  protected abstract openRunner(sandbox: Sandbox): Promise<CommandRunner>;
  protected abstract score(episode: EpisodeState): Promise<Score>;

  /** The env's name in logs (InterCode's `environment` field). */
  abstract readonly logName: string;

  /** The env's dataset (empty in tool mode). */
  get tasks(): readonly Task[] {
    return this.config.dataset ?? [];
  }

  get currentTask(): Task | null {
    return this.ledger.task;
  }

  /** How the last episode ended, from its last step until the next reset (what EpisodeLogWriter writes). */
  endedEpisode(): EndedEpisode | undefined {
    return this.ledger.endedEpisode;
  }

  async reset(options: ResetOptions = {}): Promise<ResetResult> {
    const task = chooseTask(options, this.config.dataset ?? [], this.random);
    this.ledger.stop();
    const workspace = await this.lease.take();
    try {
      await this.prepareEpisode(workspace, task);
    } catch (error) {
      this.lease.retire();
      throw error;
    }
    this.ledger.begin(task, task?.query ?? '');
    this.controlViolationsAtReset = workspace.control.violations;
    const disk = workspace.sandbox.disk;
    return { observation: task?.query ?? '', info: { task, ...(disk ? { disk: { limitBytes: disk.limitBytes, enforcement: disk.enforcement } } : {}) } };
  }

  async step(action: string, options: StepOptions = {}): Promise<StepResult> {
    const workspace = this.lease.held?.workspace;
    if (!workspace) throw new EnvStateError('step() called before reset()');
    if (this.ledger.ended) throw new EnvStateError('step() called after the episode ended; call reset()');
    const verb = action.trim();
    try {
      if (verb === 'submit' || verb === 'skip') return await this.finish(workspace, verb);
      return await this.execute(workspace, action, options);
    } catch (error) {
      const cut = await failedStepEnd(error, workspace.sandbox, this.scorerBreached(workspace), this.ledger.lastObservation);
      if (!cut) throw error;
      return this.cutOff(cut);
    }
  }

  /** Something wrote into the scorer's shell since the episode began: its answers cannot be trusted. */
  private scorerBreached = (workspace: Workspace): boolean => workspace.control.violations > this.controlViolationsAtReset;

  private async finish(workspace: Workspace, verb: 'submit' | 'skip'): Promise<StepResult> {
    // Written past the disk limit since the last step (a process left running, say): not scored.
    const overDisk = await diskLimitEvent(workspace.sandbox);
    if (overDisk) return this.cutOff(overDiskEnd(overDisk, this.ledger.lastObservation));
    const task = this.ledger.task;
    const score = verb === 'submit' && task ? await this.score(this.episodeState(workspace, task)) : skippedScore(verb);
    if (this.scorerBreached(workspace)) return this.cutOff({ observation: this.ledger.lastObservation, truncation: SCORER_SHELL_BREACHED });
    this.ledger.end(score.reward, { ...score.details, reward: score.parts });
    return endStep(this.ledger.lastObservation, score);
  }

  /** Ends the episode cut off, never scored; its log says why. */
  private async cutOff(cut: CutOff): Promise<StepResult> {
    this.ledger.end(null, { truncated: cut.truncation.message });
    return truncatedStep(cut);
  }

  /** The longest the next action may run, when an env limits it below its runner's own limit (the task env: the agent's time left). */
  protected actionTimeoutMs(): number | undefined {
    return undefined;
  }

  private async execute({ runner, sandbox }: Workspace, action: string, options: StepOptions): Promise<StepResult> {
    const limit = this.actionTimeoutMs();
    const ran = await runner.run(action, { ...(limit === undefined ? {} : { timeoutMs: limit }), ...(options.signal ? { signal: options.signal } : {}) });
    // Writes past the limit that the runner does not watch (the Python session's), or made between steps (DiskLimit.exceededNow).
    const overDisk = ran.events.some((e) => e.kind === 'disk-limit') ? undefined : await diskLimitEvent(sandbox);
    const result = overDisk ? { ...ran, events: [...ran.events, overDisk] } : ran;
    const observation = renderObservation(result);
    this.ledger.record(action, observation);
    const figures = { exitCode: result.exitCode, durationMs: result.durationMs, events: result.events };
    const breach = untrustedEnd(result.events);
    if (breach) return this.cutOff({ observation, truncation: breach, info: figures });
    return { observation, reward: 0, terminated: false, truncated: false, info: { actionExecuted: result.exitCode === 0, ...figures } };
  }

  /** Scores the episode as it stands without ending it (what InterCode's logs recorded after every action). */
  async peekScore(): Promise<Score> {
    const [held, task] = [this.lease.held, this.ledger.task];
    if (!held || !task) throw new EnvStateError('peekScore() needs a reset() with a task');
    return this.score(this.episodeState(held.workspace, task));
  }

  private episodeState({ sandbox, runner, control, reference, fromImage }: Workspace, task: Task): EpisodeState {
    const { lastObservation, steps } = this.ledger;
    return { task, sandbox, runner, control, ...(reference ? { reference } : {}), fromImage: fromImage === true, lastObservation, steps };
  }

  async close(): Promise<void> {
    this.ledger.stop();
    this.checkpoints.close();
    await this.lease.close();
  }

  /** Saves the episode as it stands (see {@link SandboxCheckpoints}); it goes on. @throws EnvStateError without a live episode; CheckpointError where it cannot be carried exactly. */
  async checkpoint(): Promise<SandboxCheckpoint> {
    const held = this.lease.held;
    if (!held || this.ledger.ended) throw new EnvStateError('checkpoint() needs an episode under way: call reset()');
    return this.checkpoints.save(held, { ...this.ledger.snapshot(), envEpisode: this.envEpisodeState() });
  }

  /** Continues `checkpoint`'s episode here (any env of its kind); the current one is dropped. @throws as {@link SandboxCheckpoints.load}. */
  async restore(checkpoint: SandboxCheckpoint): Promise<void> {
    const { held, state } = await this.checkpoints.load(checkpoint);
    this.lease.hold(held);
    this.ledger.continueFrom(state);
    this.controlViolationsAtReset = held.workspace.control.violations;
    this.resumeEnvEpisodeState(state.envEpisode);
  }

  /** How this env's episodes are carried when its runner's state cannot be copied (see ReplayCheckpointer). Default: none (by copy). */
  protected replayObserver(): ReplayObserver | undefined {
    return undefined;
  }

  /** What this env kind keeps of its episode besides the ledger, as plain data a checkpoint carries (CTF: the flag submitted). */
  protected envEpisodeState(): Record<string, unknown> {
    return {};
  }

  /** Takes back, after a restore, what {@link envEpisodeState} gave at checkpoint time. Default: nothing. */
  protected resumeEnvEpisodeState(_state: Readonly<Record<string, unknown>>): void {}

  /** Refuses an episode of `spec` on `task` this env cannot score (default: one of another image). @throws CheckpointError CHECKPOINT_REFUSED */
  protected checkRestorable(spec: SandboxSpec, _task: Task | null): void {
    if (spec.image !== this.config.spec.image) throw otherImage(spec.image, this.config.spec.image);
  }

  /** Removes `checkpoint`'s files (a restore of it then fails). Idempotent. */
  releaseCheckpoint(checkpoint: EpisodeCheckpoint): void {
    this.checkpoints.release(checkpoint);
  }

  /**
   * `n` independent episodes continuing this one, each in a new env of this kind (the caller
   * closes them); this one goes on. All or none. @throws as {@link checkpoint} and {@link restore}.
   */
  fork(n: number): Promise<SandboxEnv[]> {
    return forkEpisode(this, n, () => {
      const child = this.sibling();
      // Children of an env on a shared warm pool are laid over its ready spares (see restore).
      if (this.sharesWorkspaces && !this.lease.ownsSource) child.spares = this.lease.source;
      return child;
    });
  }

  /** A new env of this kind and configuration, for {@link fork}. Default: none (CHECKPOINT_UNSUPPORTED). */
  protected sibling(): SandboxEnv {
    throw new CheckpointError('CHECKPOINT_UNSUPPORTED', `${this.id} cannot make a sibling env to fork into`);
  }
}
