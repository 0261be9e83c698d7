import type { Task } from '../datasets/index.js';
import { EnvStateError, EpisodeUnscorableError, SandboxError } from '../errors.js';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ShellSession } from '../sandbox/shell/shell-session.js';
import { idlePidScript } from '../sandbox/shell/shell-script.js';
import type { CommandEvent, CommandRunner } from '../sandbox/shell/types.js';
import { renderObservation } from '../sandbox/shell/types.js';
import { type Sandbox, type SandboxRuntime, type SandboxSpec, type WarmRole } from '../sandbox/types.js';
import { FreshWorkspaces } from '../pool/fresh-workspaces.js';
import { NO_RUNNER, type Workspace, type WorkspaceFactory, type WorkspaceSource } from '../pool/types.js';
import { PINNED_PIDS, startAtPid } from '../pool/process-ids.js';
import { toIntercodeLog, writeEpisodeLog } from '../trajectory/index.js';
import { chooseTask, endStep, seededRandom, skippedScore } from './episode.js';
import type { ResetOptions, ResetResult, Score, StepInfo, StepOptions, StepResult, TaskEnv } from './types.js';
import { CheckpointStore, DEFAULT_LAYER_LIMITS, forkEpisode, SHELL_VALUES_NOT_CARRIED, type EpisodeBookkeeping, type EpisodeCheckpoint, type ReplayedEpisodeState, type ReplayObserver, type SandboxEpisodeState } from './checkpoint.js';
import { CheckpointError } from '../errors.js';
import { CarryRefusal } from '../sandbox/carry-refusal.js';
import { readOutsideLayer, requireSameOutsideLayer } from '../sandbox/outside-layer.js';
import { captureShellState, restoreShellState, type ShellState } from '../sandbox/shell/shell-state.js';
import type { LayerLimits } from '../sandbox/types.js';

export interface SandboxEnvConfig {
  runtime: SandboxRuntime;
  spec: SandboxSpec;
  /** Tasks; omitted or empty: tool mode (no query, `submit` scores 0). */
  dataset?: readonly Task[];
  /** Where to write one InterCode-format log per finished episode. */
  trajectoryDir?: string;
  /** Bounds on what a checkpoint copies (default {@link DEFAULT_LAYER_LIMITS}). */
  checkpointLimits?: LayerLimits;
  /** Seed for choosing random tasks on `reset()` without a task. */
  seed?: number;
}

/** The harness's own shell in each sandbox: long time limit, large outputs (git status, md5 lists, restores). */
export const CONTROL_SHELL = { harness: true, timeoutMs: 30_000, maxOutputBytes: 4 * 1024 * 1024, killOutputBytes: 8 * 1024 * 1024 };

/** What the episode has done so far, handed to the scorer on submit. */
export interface EpisodeState {
  task: Task;
  sandbox: Sandbox;
  /** The runner the agent's actions went through (the env's own kind: {@link SandboxEnv.openRunner}). */
  runner: CommandRunner;
  /** A shell of the harness's own in the episode's sandbox, for reading its state (never the agent's). */
  control: ShellSession;
  /** An untouched sandbox of the same image, when the workspace has one (see Workspace.reference). */
  reference?: Sandbox;
  /** The sandbox is new: every path it has written, this episode wrote (see Workspace.fromImage). */
  fromImage: boolean;
  /** The last observation (the query itself before any action, as in InterCode). */
  lastObservation: string;
  steps: readonly { action: string; observation: string }[];
}

/**
 * An episode in a clean sandbox: `reset` takes a workspace (sandbox + runner) from its
 * source — by default a new sandbox from the env's image, or a warm pool's (see
 * {@link useWorkspaces}) — so every change the previous episode made is gone, wherever it
 * was; `step` runs an action through the {@link CommandRunner}, `submit` scores and ends,
 * `skip` ends with reward 0. A sandbox that dies mid-episode truncates the episode with
 * the cause; it is never scored. Subclasses supply the runner and the scorer.
 */
export abstract class SandboxEnv implements TaskEnv {
  abstract readonly id: string;
  /**
   * Whether this env's episodes may take workspaces from a pool shared with other envs: the
   * workspace must not depend on the task, and the env must keep nothing of its own about
   * the runner (it reads the episode's runner from the {@link EpisodeState}). What depends
   * on the task goes in at reset, through {@link prepareEpisode} (CTF copies its task's files
   * there). Not so for bash's `--reset intercode`, whose envs keep sandboxes of their own.
   */
  readonly sharesWorkspaces: boolean = false;
  private workspace: Workspace | undefined;
  private source: WorkspaceSource;
  private ownsSource = true;
  private task: Task | null = null;
  private steps: { action: string; observation: string }[] = [];
  private lastObservation = '';
  private ended = true;
  private readonly random: () => number;
  /** The current workspace came from a checkpoint (see {@link restore}): no source's; removed when retired. */
  private restoredWorkspace: Workspace | undefined;
  /**
   * Where a restore may take a ready workspace besides this env's own source: the warm pool
   * of the env that forked this one (see {@link fork}). Resets still use the own source.
   */
  private spares: WorkspaceSource | undefined;
  /** The source the current workspace came from, when it is not {@link source} (a spare's). */
  private lender: WorkspaceSource | undefined;
  /** This env's checkpoints (released when it closes). */
  private readonly checkpoints = new CheckpointStore();
  /**
   * What a new sandbox shows outside its layer (src/sandbox/outside-layer.ts), by runtime and
   * spec, as the first child restored from a checkpoint read it (a child is a new sandbox, or
   * a pool's spare restored as one): later restores compare the checkpoint's with it and read
   * no child's. Shared by every env of the process (a fork's children are new envs).
   */
  private static readonly newSandboxOutside = new Map<string, string>();

  /** The image this env's sandboxes start from (its tag): what an exported task directory builds on. */
  get image(): string {
    return this.config.spec.image;
  }

  constructor(protected readonly config: SandboxEnvConfig) {
    this.random = seededRandom(config.seed ?? Date.now());
    this.source = new FreshWorkspaces(this.workspaceFactory());
  }

  /** How this env makes a workspace: a sandbox from its spec (or `spec`: an env whose tasks have images of their own) with its runner open. */
  workspaceFactory(spec: SandboxSpec = this.config.spec): WorkspaceFactory {
    const { runtime } = this.config;
    /**
     * A workspace on `sandbox`: its control shell and its runner. An adopted sandbox's shells
     * were handed over when it was parked: taken over where they answer (no new process);
     * else a new control shell, and no runner (the restore that cleans it before use opens one).
     */
    const open = async (sandbox: Sandbox, adopted = false): Promise<Workspace> => {
      try {
        const resumed = adopted ? await ShellSession.resume(sandbox, 'control', CONTROL_SHELL) : undefined;
        // A new sandbox's shells, and its episode's first process, get the pinned process ids.
        const control = resumed ?? await startAtPid(sandbox, PINNED_PIDS.control, () => ShellSession.open(sandbox, CONTROL_SHELL));
        // Later shells start through the control shell: no engine exec per reset.
        sandbox.launchThrough?.(control);
        if (!adopted) {
          const runner = await startAtPid(sandbox, PINNED_PIDS.agent, () => this.openRunner(sandbox));
          await sandbox.setNextPid?.(PINNED_PIDS.episode);
          return { sandbox, control, runner, fromImage: true };
        }
        const runner = await this.resumeRunner(sandbox);
        return { sandbox, control, ...(runner ? { runner, unusedRunnerPid: runner.pid } : { runner: NO_RUNNER }) };
      } catch (error) {
        await sandbox.destroy().catch(() => undefined);
        throw error;
      }
    };
    return {
      ...(runtime.ociRuntime !== undefined ? { ociRuntime: runtime.ociRuntime } : {}),
      ...(runtime.freshRoots ? { freshRoots: true } : {}),
      create: async () => open(await runtime.create(spec)),
      openRunner: (sandbox) => this.openRunner(sandbox),
      destroy: async ({ sandbox, runner, control }) => {
        runner.close();
        control.close();
        await sandbox.destroy();
      },
      ...(runtime.adopt && runtime.park
        ? {
            adopt: async (role: WarmRole) => {
              const sandbox = await runtime.adopt!(spec, role);
              return sandbox ? open(sandbox, true) : undefined;
            },
            // A parked workspace is a clean idle one: its runner has run nothing since its restore.
            park: async ({ sandbox, runner, control }: Workspace, role: WarmRole, ttlMs: number) => {
              if (runner instanceof ShellSession) await runner.handOver('agent');
              else runner.close();
              await control.handOver('control');
              return runtime.park!(sandbox, role, ttlMs);
            },
          }
        : {}),
    };
  }

  /**
   * The agent's shell an earlier process handed over in an adopted `sandbox`, when this
   * env's runner is such a shell with the same options; undefined otherwise (the default:
   * envs whose runner is something else start a new one).
   */
  protected async resumeRunner(_sandbox: Sandbox): Promise<ShellSession | undefined> {
    return undefined;
  }

  /**
   * Takes workspaces from `source` (e.g. a warm pool shared by several envs) from the next
   * reset on. The caller keeps ownership unless `own` is set: `close()` then releases this
   * env's workspace to it but does not close it.
   */
  useWorkspaces(source: WorkspaceSource, { own = false }: { own?: boolean } = {}): void {
    this.retire();
    if (this.ownsSource) void this.source.close();
    this.source = source;
    this.ownsSource = own;
  }

  /** The scorer shell's breach count when the episode began (see ShellSession.violations). */
  private controlViolationsAtReset = 0;

  /**
   * Where this env's episodes get their workspaces now (new ones, or a shared pool's): for
   * work of the env's own that needs a clean sandbox too (a gold run). Hand each workspace
   * back with `release`, never to another source.
   */
  protected workspaceSource(): WorkspaceSource {
    return this.source;
  }

  /**
   * Called by `reset` once the episode's workspace is taken, before the episode starts: what
   * an env puts in per task (CTF: the task's files, and the agent's shell started among them).
   * Task-independent set-up belongs in {@link openRunner}, which a pool runs ahead of time.
   * Default: nothing.
   */
  protected async prepareEpisode(_workspace: Workspace, _task: Task | null): Promise<void> {}

  protected abstract openRunner(sandbox: Sandbox): Promise<CommandRunner>;
  protected abstract score(episode: EpisodeState): Promise<Score>;

  /** The env's name in logs (InterCode's `environment` field). */
  protected abstract readonly logName: string;

  /** The env's dataset (empty in tool mode). */
  get tasks(): readonly Task[] {
    return this.config.dataset ?? [];
  }

  get currentTask(): Task | null {
    return this.task;
  }

  async reset(options: ResetOptions = {}): Promise<ResetResult> {
    const dataset = this.config.dataset ?? [];
    this.task = chooseTask(options, dataset, this.random);
    this.retire();
    this.workspace = await this.source.acquire();
    try {
      await this.prepareEpisode(this.workspace, this.task);
    } catch (error) {
      this.retire();
      throw error;
    }
    this.steps = [];
    this.lastObservation = this.task?.query ?? '';
    this.controlViolationsAtReset = this.workspace.control.violations;
    this.ended = false;
    const disk = this.workspace.sandbox.disk;
    return {
      observation: this.task?.query ?? '',
      info: { task: this.task, ...(disk ? { disk: { limitBytes: disk.limitBytes, enforcement: disk.enforcement } } : {}) },
    };
  }

  async step(action: string, options: StepOptions = {}): Promise<StepResult> {
    if (!this.workspace) throw new EnvStateError('step() called before reset()');
    if (this.ended) throw new EnvStateError('step() called after the episode ended; call reset()');
    const verb = action.trim();
    try {
      if (verb === 'submit' || verb === 'skip') return await this.finish(verb);
      return await this.execute(action, options);
    } catch (error) {
      // The scorer ran but could give no reward (a verifier that timed out, say): cut off, never a silent 0.
      if (error instanceof EpisodeUnscorableError) return this.cutOff(this.lastObservation, { reason: error.reason, message: error.message, details: { ...error.details } });
      if (!(error instanceof SandboxError)) throw error;
      // Something wrote into the scorer's shell, whose answer then failed: that is the cause.
      if (this.workspace.control.violations > this.controlViolationsAtReset) return this.cutOff(this.lastObservation, SCORER_SHELL_BREACHED);
      // Its processes were killed for writing past the disk limit (see DiskGuard): that is the cause.
      const overDisk = await diskLimitEvent(this.workspace.sandbox).catch(() => undefined);
      if (overDisk) {
        const truncation = untrustedEnd([overDisk])!;
        return this.cutOff(`[intercode: the sandbox's processes were stopped: ${truncation.message}]`, truncation, { events: [overDisk] });
      }
      if (error.code === 'STATE_UNREADABLE') {
        return this.cutOff(`[intercode: the sandbox's state could not be read: ${error.message}]`, { reason: 'state-unreadable', message: error.message });
      }
      return this.cutOff(`[intercode: the sandbox was lost: ${error.message}]`, { reason: 'sandbox-lost', message: error.message });
    }
  }

  private async finish(verb: 'submit' | 'skip'): Promise<StepResult> {
    const control = this.workspace!.control;
    // Written past the disk limit since the last step (a process left running, say): not scored.
    const overDisk = await diskLimitEvent(this.workspace!.sandbox);
    if (overDisk) return this.cutOff(this.lastObservation, untrustedEnd([overDisk])!, { events: [overDisk] });
    const score = verb === 'submit' && this.task ? await this.score(this.episodeState(this.task)) : skippedScore(verb);
    // Something wrote into the scorer's shell: its answers cannot be trusted, nor the score.
    if (control.violations > this.controlViolationsAtReset) return this.cutOff(this.lastObservation, SCORER_SHELL_BREACHED);
    this.ended = true;
    await this.writeLog(score.reward, { ...score.details, reward: score.parts });
    return endStep(this.lastObservation, score);
  }

  /** Ends the episode cut off, never scored; its log says why. */
  private async cutOff(observation: string, truncation: Truncation, info: Partial<Pick<StepInfo, 'exitCode' | 'durationMs' | 'events'>> = {}): Promise<StepResult> {
    this.ended = true;
    await this.writeLog(null, { truncated: truncation.message });
    return {
      observation,
      reward: 0,
      terminated: false,
      truncated: true,
      info: { actionExecuted: false, exitCode: null, durationMs: 0, events: [], ...info, truncation },
    };
  }

  /** The longest the next action may run, when an env limits it below its runner's own limit (the task env: the agent's time left). */
  protected actionTimeoutMs(): number | undefined {
    return undefined;
  }

  private async execute(action: string, options: StepOptions): Promise<StepResult> {
    const limit = this.actionTimeoutMs();
    const ran = await this.workspace!.runner.run(action, { ...(limit === undefined ? {} : { timeoutMs: limit }), ...(options.signal ? { signal: options.signal } : {}) });
    // Runners that do not watch the disk themselves (the Python session), and writes made
    // between steps, are caught here: one statfs, and a walk of the layer only when the
    // host's free space moved (see DiskLimit.exceededNow).
    const overDisk = ran.events.some((e) => e.kind === 'disk-limit') ? undefined : await diskLimitEvent(this.workspace!.sandbox);
    const result = overDisk ? { ...ran, events: [...ran.events, overDisk] } : ran;
    const observation = renderObservation(result);
    this.steps.push({ action, observation });
    this.lastObservation = observation;
    const breach = untrustedEnd(result.events);
    // The episode's state cannot be trusted: it ends here, cut off and never scored.
    if (breach) return this.cutOff(observation, breach, { exitCode: result.exitCode, durationMs: result.durationMs, events: result.events });
    return {
      observation,
      reward: 0,
      terminated: false,
      truncated: false,
      info: { actionExecuted: result.exitCode === 0, exitCode: result.exitCode, durationMs: result.durationMs, events: result.events },
    };
  }

  /** Scores the episode as it stands without ending it (what InterCode's logs recorded after every action). */
  async peekScore(): Promise<Score> {
    if (!this.workspace || !this.task) throw new EnvStateError('peekScore() needs a reset() with a task');
    return this.score(this.episodeState(this.task));
  }

  private episodeState(task: Task): EpisodeState {
    const { sandbox, runner, control, reference, fromImage } = this.workspace!;
    return { task, sandbox, runner, control, ...(reference ? { reference } : {}), fromImage: fromImage === true, lastObservation: this.lastObservation, steps: this.steps };
  }

  async close(): Promise<void> {
    this.ended = true;
    this.retire();
    this.checkpoints.close();
    if (this.ownsSource) await this.source.close();
  }

  /** Hands the current workspace back to its source, which removes or restores it off the hot path (one made by a restore is removed). */
  private retire(): void {
    const workspace = this.workspace;
    this.workspace = undefined;
    if (!workspace) return;
    const lender = this.lender ?? this.source;
    this.lender = undefined;
    if (workspace === this.restoredWorkspace) {
      this.restoredWorkspace = undefined;
      workspace.runner.close();
      workspace.control.close();
      void workspace.sandbox.destroy().catch(() => undefined);
    } else lender.release(workspace);
  }

  /**
   * Saves the episode as it stands: the sandbox's written files (the sandbox frozen while they
   * are copied on the host), the agent shell's state, the task, steps and last observation.
   * The episode goes on unchanged. Processes the episode left running are not carried: the
   * handle's `info.dropped` lists them. An env with a {@link replayObserver} instead saves the
   * steps and what the observer reads (a restore replays them).
   * @throws EnvStateError without a live episode; CheckpointError CHECKPOINT_UNSUPPORTED
   *   where the runtime cannot read the sandbox's layer or the runner is no bash session,
   *   CHECKPOINT_REFUSED where this state cannot be carried exactly (details.reason).
   */
  async checkpoint(): Promise<EpisodeCheckpoint<SandboxEpisodeState | ReplayedEpisodeState>> {
    const workspace = this.workspace;
    if (!workspace || this.ended) throw new EnvStateError('checkpoint() needs an episode under way: call reset()');
    const started = performance.now();
    const { sandbox, runner, control } = workspace;
    const observer = this.replayObserver();
    if (observer) return this.checkpointForReplay(observer, workspace, started);
    if (!sandbox.archiveLayer || !this.config.runtime.createFromLayer) throw new CheckpointError('CHECKPOINT_UNSUPPORTED', `the ${this.config.runtime.name} runtime cannot copy a sandbox's written files`);
    if (!(runner instanceof ShellSession)) throw new CheckpointError('CHECKPOINT_UNSUPPORTED', `${this.id}'s runner is not a bash session: its state cannot be checkpointed`);
    // Before the capture, whose subshell is a process of the sandbox while it runs.
    const [left, outside] = await Promise.all([
      leftRunning(control, runner.pid),
      readOutsideLayer(control).catch((error: unknown) => {
        throw error instanceof CarryRefusal ? refusedCheckpoint(error) : error;
      }),
    ]);
    const { id, dir } = this.checkpoints.allocate();
    mkdirSync(dir, { recursive: true });
    try {
      // The shell's state is read while the layer is archived. With no process of the episode's
      // left (not even one without a command line), nothing writes meanwhile (the capture's
      // subshell runs builtins and writes nothing): the sandbox is not frozen. Otherwise it is,
      // and the capture waits for the thaw.
      const [captured, archived] = await Promise.allSettled([
        captureShellState(runner),
        sandbox.archiveLayer(join(dir, 'layer.tar'), this.config.checkpointLimits ?? DEFAULT_LAYER_LIMITS, left.any),
      ]);
      if (captured.status === 'rejected') throw captured.reason;
      if (archived.status === 'rejected') throw archived.reason;
      const [shell, layer] = [captured.value, archived.value];
      return this.checkpoints.add({
        id,
        envId: this.id,
        info: {
          steps: this.steps.length,
          layer: { paths: layer.paths, bytes: layer.bytes, archiveBytes: layer.archiveBytes },
          dropped: { processes: left.commands, shellValues: SHELL_VALUES_NOT_CARRIED },
          durationMs: performance.now() - started,
        },
        state: { spec: sandbox.spec, task: this.task, steps: [...this.steps], lastObservation: this.lastObservation, layer, shell, outside, envEpisode: this.envEpisodeState() },
      });
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      if (error instanceof CarryRefusal) throw refusedCheckpoint(error);
      throw error;
    }
  }

  /**
   * Continues the episode `checkpoint` saved, in this env (it may be another env of the same
   * kind than the one that made it): a new sandbox whose files are the checkpoint's, a new
   * agent shell given its state (read back and compared: equal, or refused), and the task,
   * steps and last observation. The current episode, if any, is dropped.
   * @throws EnvStateError for a released checkpoint or one of another env kind;
   *   CheckpointError CHECKPOINT_REFUSED when the shell's state could not be given exactly.
   */
  async restore(checkpoint: EpisodeCheckpoint<SandboxEpisodeState | ReplayedEpisodeState>): Promise<void> {
    this.checkpoints.requireLive(checkpoint);
    if (checkpoint.envId !== this.id) throw new EnvStateError(`checkpoint ${checkpoint.id} is of ${checkpoint.envId}, not ${this.id}`);
    if ('observed' in checkpoint.state) return this.restoreByReplay(checkpoint.state);
    const { runtime } = this.config;
    if (!runtime.createFromLayer) throw new CheckpointError('CHECKPOINT_UNSUPPORTED', `the ${runtime.name} runtime cannot make a sandbox from a checkpoint`);
    const { spec, layer, shell, outside, task, steps, lastObservation, envEpisode } = checkpoint.state;
    this.checkRestorable(spec, task);
    // What lies outside the layer is not carried: refused unless the parent's is a new sandbox's.
    const outsideKey = `${runtime.name} ${JSON.stringify(spec)}`;
    const known = SandboxEnv.newSandboxOutside.get(outsideKey);
    if (known !== undefined) {
      try {
        requireSameOutsideLayer(outside, known);
      } catch (error) {
        throw refusedCheckpoint(error as CarryRefusal);
      }
    }
    const checkOutside = known !== undefined ? undefined : async (control: CommandRunner) => {
      const child = await readOutsideLayer(control);
      SandboxEnv.newSandboxOutside.set(outsideKey, child);
      requireSameOutsideLayer(outside, child);
    };
    const source = this.spares ?? this.source;
    const inPlace = spec.image === this.config.spec.image ? await this.workspaceLaidOver(source, layer, shell, checkOutside) : undefined;
    const workspace = inPlace ?? (await this.workspaceFromLayer(runtime.createFromLayer.bind(runtime), spec, layer, shell, checkOutside));
    this.continueEpisode(workspace, inPlace === undefined, { task, steps, lastObservation, envEpisode });
    if (inPlace) this.lender = source;
  }

  /**
   * The checkpoint's files and shell in a warm workspace `source` has ready now (a pool's
   * idle one: see WorkspaceSource.acquireIfIdle), laid over it in place (Sandbox.applyLayer):
   * no new sandbox. Undefined where there is none ready, or it cannot be done in place (the
   * workspace then goes back to its source, which replaces it if it was written); the
   * caller then makes a new sandbox from the layer.
   * @throws CheckpointError CHECKPOINT_REFUSED when the shell's state could not be given exactly.
   */
  private async workspaceLaidOver(source: WorkspaceSource, layer: SandboxEpisodeState['layer'], shell: ShellState, checkOutside?: (control: CommandRunner) => Promise<void>): Promise<Workspace | undefined> {
    const workspace = await source.acquireIfIdle?.();
    if (!workspace) return undefined;
    const { sandbox, runner } = workspace;
    if (!(runner instanceof ShellSession) || !sandbox.applyLayer) {
      source.release(workspace);
      return undefined;
    }
    // The shell's state (but for its working directory) is replayed while the files are laid:
    // two shells of the sandbox, the agent's and ours. The workspace goes back dirty if either fails: its source restores or replaces it.
    const laid = sandbox.applyLayer(layer).then((done) => {
      if (!done) throw new Error('the layer cannot be laid in place');
    });
    try {
      // What lies outside the layer is read meanwhile (when it must be), through the harness's shell.
      await Promise.all([restoreShellState(runner, shell, laid), checkOutside?.(workspace.control)]);
      return workspace;
    } catch (error) {
      await laid.catch(() => undefined);
      source.release(workspace);
      if (error instanceof CarryRefusal) throw refusedCheckpoint(error);
      return undefined;
    }
  }

  /** Makes `workspace` this env's, continuing the episode `state` describes (`restored`: a workspace no source owns). */
  private continueEpisode(workspace: Workspace, restored: boolean, state: EpisodeBookkeeping): void {
    const { task, steps, lastObservation, envEpisode } = state;
    this.retire();
    this.workspace = workspace;
    if (restored) this.restoredWorkspace = workspace;
    this.task = task;
    this.steps = [...steps];
    this.lastObservation = lastObservation;
    this.controlViolationsAtReset = workspace.control.violations;
    this.ended = false;
    this.resumeEnvEpisodeState(envEpisode);
  }

  /**
   * How this env's episodes are carried when its runner's state cannot be copied (a runner
   * that is no bash session): an observer of the episode's state. Its checkpoints then hold
   * the steps and what the observer saw; a restore replays the steps into a workspace the
   * env's source gives (as a reset does), each observation compared with the recorded one,
   * then the observer's reading — equal, or refused (reason `not-replayable`). Default:
   * none (the written files and the agent shell's state are copied).
   */
  protected replayObserver(): ReplayObserver | undefined {
    return undefined;
  }

  private async checkpointForReplay(observer: ReplayObserver, workspace: Workspace, started: number): Promise<EpisodeCheckpoint<ReplayedEpisodeState>> {
    const observed = await observer.observe(workspace.sandbox, workspace.runner, this.config.checkpointLimits ?? DEFAULT_LAYER_LIMITS).catch((error: unknown) => {
      if (error instanceof CarryRefusal) throw refusedCheckpoint(error);
      throw error;
    });
    const { id } = this.checkpoints.allocate();
    return this.checkpoints.add({
      id,
      envId: this.id,
      info: {
        steps: this.steps.length,
        layer: { paths: 0, bytes: 0, archiveBytes: 0 },
        dropped: { processes: [], shellValues: [] },
        durationMs: performance.now() - started,
        replay: { actions: this.steps.length },
      },
      state: { spec: workspace.sandbox.spec, task: this.task, steps: [...this.steps], lastObservation: this.lastObservation, envEpisode: this.envEpisodeState(), observed },
    });
  }

  /**
   * {@link restore} of a checkpoint made by {@link replayObserver}: a workspace from this
   * env's source prepared for the task (as a reset), every step replayed and its observation
   * compared, then the observer's reading. Nothing is handed out unless all are equal.
   * @throws CheckpointError CHECKPOINT_REFUSED (reason `not-replayable`, `details.step`: the
   *   first step whose observation differed, or the step count when the state after them did).
   */
  private async restoreByReplay(state: ReplayedEpisodeState): Promise<void> {
    const observer = this.replayObserver();
    if (!observer) throw new CheckpointError('CHECKPOINT_UNSUPPORTED', `${this.id} cannot continue an episode by replay`);
    const { spec, task, steps, observed } = state;
    this.checkRestorable(spec, task);
    const workspace = await this.source.acquire();
    try {
      await this.prepareEpisode(workspace, task);
      for (const [step, { action, observation }] of steps.entries()) {
        const replayed = renderObservation(await workspace.runner.run(action));
        if (replayed !== observation) throw notReplayable(step, { part: 'observation', recorded: observation.slice(0, 500), replayed: replayed.slice(0, 500) });
      }
      const seen = await observer.observe(workspace.sandbox, workspace.runner, this.config.checkpointLimits ?? DEFAULT_LAYER_LIMITS);
      const difference = observer.difference(observed, seen);
      if (difference) throw notReplayable(steps.length, difference);
    } catch (error) {
      this.source.release(workspace);
      if (error instanceof CarryRefusal) throw refusedCheckpoint(error);
      throw error;
    }
    this.continueEpisode(workspace, false, state);
  }

  /**
   * What this env kind keeps of its episode beyond the base's task, steps and observation,
   * as plain data a checkpoint carries (CTF: the flag submitted; task directories: the agent
   * time left). Default: nothing.
   */
  protected envEpisodeState(): Record<string, unknown> {
    return {};
  }

  /** Takes back, after a restore, what {@link envEpisodeState} gave at checkpoint time. Default: nothing. */
  protected resumeEnvEpisodeState(_state: Readonly<Record<string, unknown>>): void {}

  /**
   * Whether this env can continue an episode of a sandbox of `spec` on `task`: its scorer
   * knows only its own image's (a checkpoint of another image, restored here, would be
   * scored against this image's gold). Default: the image is this env's.
   * @throws CheckpointError CHECKPOINT_REFUSED (reason `other-image`) otherwise.
   */
  protected checkRestorable(spec: SandboxSpec, _task: Task | null): void {
    if (spec.image !== this.config.spec.image) throw otherImage(spec.image, this.config.spec.image);
  }

  private async workspaceFromLayer(create: NonNullable<SandboxRuntime['createFromLayer']>, spec: SandboxSpec, layer: SandboxEpisodeState['layer'], shell: ShellState, checkOutside?: (control: CommandRunner) => Promise<void>): Promise<Workspace> {
    const sandbox = await create(spec, layer);
    let control: ShellSession | undefined;
    let runner: CommandRunner | undefined;
    try {
      control = await ShellSession.open(sandbox, CONTROL_SHELL);
      sandbox.launchThrough?.(control);
      runner = await this.openRunner(sandbox);
      await Promise.all([restoreShellState(runner, shell), checkOutside?.(control)]);
      // Every path of its layer is the episode's (as in the parent, made from the image).
      return { sandbox, control, runner, fromImage: true };
    } catch (error) {
      runner?.close();
      control?.close();
      await sandbox.destroy().catch(() => undefined);
      if (error instanceof CarryRefusal) throw refusedCheckpoint(error);
      throw error;
    }
  }

  /** Removes `checkpoint`'s files (a restore of it then fails). Idempotent. */
  releaseCheckpoint(checkpoint: EpisodeCheckpoint): void {
    this.checkpoints.release(checkpoint);
  }

  /**
   * `n` independent episodes continuing this one from now, each in an env of this kind and a
   * sandbox of its own (this episode goes on unchanged). The caller closes them. All or none:
   * when one cannot be made, those made are closed and the error thrown.
   * @throws as {@link checkpoint} and {@link restore}; CHECKPOINT_UNSUPPORTED for an env that cannot make a sibling.
   */
  fork(n: number): Promise<SandboxEnv[]> {
    return forkEpisode(this, n, () => {
      const child = this.sibling();
      // Children of an env on a shared warm pool are laid over its ready spares (see restore).
      if (this.sharesWorkspaces && !this.ownsSource) child.spares = this.source;
      return child;
    });
  }

  /** A new env of this kind and configuration, for {@link fork}. Default: none (CHECKPOINT_UNSUPPORTED). */
  protected sibling(): SandboxEnv {
    throw new CheckpointError('CHECKPOINT_UNSUPPORTED', `${this.id} cannot make a sibling env to fork into`);
  }

  private async writeLog(reward: number | null, info: Record<string, unknown>): Promise<void> {
    if (!this.config.trajectoryDir || !this.task) return;
    const log = toIntercodeLog({ environment: this.logName, task: this.task, steps: this.steps, reward, info });
    await writeEpisodeLog(this.config.trajectoryDir, log);
  }
}

/**
 * The processes in the sandbox that are not the harness's (init, the idle process by its
 * pid, the control shell and the agent's shell `runnerPid`): what the episode left running.
 * `commands`: the command lines of those that have one; `any`: whether there is any such
 * process at all, one without a command line (a zombie, or one that cleared its arguments)
 * included. Read by the control shell with builtins.
 */
async function leftRunning(control: ShellSession, runnerPid: number): Promise<{ commands: string[]; any: boolean }> {
  const read = await control.run(
    `${idlePidScript('__i')}\nfor __d in /proc/[0-9]*; do __p=\${__d#/proc/}; [[ " 1 $$ $__i ${runnerPid} " == *" $__p "* ]] && continue; __a=; IFS= builtin read -r -d '' __a < "$__d/cmdline" 2>/dev/null; builtin printf '+%s\n' "$__a"; done; builtin unset -v __i __i_d __i_p __i_a __i_s __d __p __a`,
  );
  const lines = read.output.split('\n').filter(Boolean);
  return { commands: lines.map((line) => line.slice(1)).filter(Boolean), any: lines.length > 0 };
}

/** A `disk-limit` event when the sandbox's watched layer is over its limit, else undefined. */
async function diskLimitEvent(sandbox: Sandbox): Promise<CommandEvent | undefined> {
  const disk = sandbox.disk;
  const used = await disk?.exceededNow?.();
  return used === undefined ? undefined : { kind: 'disk-limit', usedBytes: used, limitBytes: disk!.limitBytes };
}

type Truncation = NonNullable<StepInfo['truncation']>;

const SCORER_SHELL_BREACHED: Truncation = { reason: 'protocol-violation', message: "the scorer's shell received input that was not the harness's (a protocol violation)" };

/** The event that makes an episode untrustworthy (it then ends truncated), if any. */
function untrustedEnd(events: readonly CommandEvent[]): Truncation | undefined {
  for (const event of events) {
    if (event.kind === 'protocol-violation') return { reason: 'protocol-violation', message: event.detail };
    if (event.kind === 'disk-limit') return { reason: 'disk-limit', message: `the sandbox wrote ${event.usedBytes} bytes, past its limit of ${event.limitBytes}` };
  }
  return undefined;
}

/** The refusal of a checkpoint whose sandbox image is not the one this env scores (see SandboxEnv.checkRestorable). */
export function otherImage(image: string, expected: string): CheckpointError {
  return new CheckpointError('CHECKPOINT_REFUSED', `the checkpoint's sandbox is of image ${image}, not ${expected}: this env cannot score it`, { details: { reason: 'other-image', image, expected } });
}

/** The refusal of a replay whose `step` (or the state after the last step) differs from the episode's. */
function notReplayable(step: number, details: Record<string, unknown>): CheckpointError {
  const where = details.part === 'observation' ? `step ${step}'s observation` : `the state after ${step} steps (${String(details.part)})`;
  return new CheckpointError('CHECKPOINT_REFUSED', `the episode is not replayable: ${where} differs when its actions are replayed in a new sandbox (time, randomness or I/O)`, { details: { reason: 'not-replayable', step, ...details } });
}

/** A part of the state that could not be carried exactly, as the env's typed refusal (nothing partial handed out). */
function refusedCheckpoint(refusal: CarryRefusal): CheckpointError {
  return new CheckpointError('CHECKPOINT_REFUSED', refusal.message, { details: { reason: refusal.reason, ...refusal.details }, cause: refusal });
}
