import type { Task } from '../datasets/index.js';
import { EnvStateError, EpisodeUnscorableError, SandboxError } from '../errors.js';
import { ShellSession } from '../sandbox/shell/shell-session.js';
import type { CommandEvent, CommandRunner } from '../sandbox/shell/types.js';
import { renderObservation } from '../sandbox/shell/types.js';
import type { Sandbox, SandboxRuntime, SandboxSpec, WarmRole } from '../sandbox/types.js';
import { FreshWorkspaces } from '../pool/fresh-workspaces.js';
import { NO_RUNNER, type Workspace, type WorkspaceFactory, type WorkspaceSource } from '../pool/types.js';
import { PINNED_PIDS, startAtPid } from '../pool/process-ids.js';
import { toIntercodeLog, writeEpisodeLog } from '../trajectory/index.js';
import { chooseTask, endStep, seededRandom, skippedScore } from './episode.js';
import type { ResetOptions, ResetResult, Score, StepInfo, StepResult, TaskEnv } from './types.js';

export interface SandboxEnvConfig {
  runtime: SandboxRuntime;
  spec: SandboxSpec;
  /** Tasks; omitted or empty: tool mode (no query, `submit` scores 0). */
  dataset?: readonly Task[];
  /** Where to write one InterCode-format log per finished episode. */
  trajectoryDir?: string;
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
        const control = resumed ?? (await startAtPid(sandbox, PINNED_PIDS.control, () => ShellSession.open(sandbox, CONTROL_SHELL))).started;
        // Later shells start through the control shell: no engine exec per reset.
        sandbox.launchThrough?.(control);
        if (!adopted) {
          const runner = (await startAtPid(sandbox, PINNED_PIDS.agent, () => this.openRunner(sandbox))).started;
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

  async step(action: string): Promise<StepResult> {
    if (!this.workspace) throw new EnvStateError('step() called before reset()');
    if (this.ended) throw new EnvStateError('step() called after the episode ended; call reset()');
    const verb = action.trim();
    try {
      if (verb === 'submit' || verb === 'skip') return await this.finish(verb);
      return await this.execute(action);
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

  private async execute(action: string): Promise<StepResult> {
    const ran = await this.workspace!.runner.run(action);
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
    if (this.ownsSource) await this.source.close();
  }

  /** Hands the current workspace back to its source, which removes or restores it off the hot path. */
  private retire(): void {
    const workspace = this.workspace;
    this.workspace = undefined;
    if (workspace) this.source.release(workspace);
  }

  private async writeLog(reward: number | null, info: Record<string, unknown>): Promise<void> {
    if (!this.config.trajectoryDir || !this.task) return;
    const log = toIntercodeLog({ environment: this.logName, task: this.task, steps: this.steps, reward, info });
    await writeEpisodeLog(this.config.trajectoryDir, log);
  }
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
