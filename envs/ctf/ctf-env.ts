import type { EpisodeState, SandboxEnvConfig } from '../../src/env/sandbox-env-types.js';
import { SandboxEnv } from '../../src/env/sandbox-env.js';
import type { ResetOptions, ResetResult, Score, StepResult } from '../../src/env/types.js';
import { ShellSession, type ShellSessionOptions } from '../../src/sandbox/shell/shell-session.js';
import type { CommandRunner } from '../../src/sandbox/shell/types.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import type { Task } from '../../src/datasets/index.js';
import type { Workspace } from '../../src/pool/types.js';
import { CTF_ROOT, taskDirectory, type TaskAssets } from './assets.js';
import { flagScore, submittedFlag } from './reward.js';

/**
 * What a wrong flag does. `continue`: the episode goes on and the observation says the
 * flag was incorrect (InterCode's evaluation scripts). `end`: the episode ends with reward 0.
 */
export type WrongFlagMode = 'continue' | 'end';

/** The observation after a wrong flag in `continue` mode: the text InterCode's evaluation script showed. */
export const INCORRECT_FLAG = 'Submitted flag is incorrect. Keep trying!';
/** The observation after a correct flag. */
export const CORRECT_FLAG = 'The submitted flag is correct.';

export interface CtfEnvConfig extends SandboxEnvConfig {
  assets: TaskAssets;
  wrongFlag: WrongFlagMode;
  shell?: Partial<ShellSessionOptions>;
}

/**
 * Capture-the-flag tasks: the task's files are copied to `/ctf/<task_id>/` in a clean
 * sandbox and the shell starts there; `submit <flag>` scores 1 for the gold flag
 * (ignoring case), else 0. Every other action runs in a persistent bash session.
 * The files go in at reset ({@link prepareEpisode}), not when a sandbox starts, so episodes
 * can take sandboxes from a warm pool shared with other CTF envs; the in-place restore
 * removes the copied files with everything else the episode added.
 */
export class CtfEnv extends SandboxEnv {
  readonly id = 'intercode/ctf-v1';
  override readonly sharesWorkspaces = true;
  readonly logName = 'ic_ctf';
  /** The flag of the submission being scored, or the last one submitted in this episode. */
  private flag: string | undefined;
  private active = false;

  constructor(protected override readonly config: CtfEnvConfig) {
    super(config);
  }

  /** `task`'s files as a tar archive rooted at `<task_id>/` (what an episode gets under /ctf). */
  taskArchive(task: Task): Promise<Buffer> {
    return this.config.assets.archive(task);
  }

  override async reset(options: ResetOptions = {}): Promise<ResetResult> {
    this.active = false;
    this.flag = undefined;
    const result = await super.reset(options);
    this.active = true;
    return result;
  }

  /**
   * `submit <flag>` scores the flag (the rest of the action, trimmed); a wrong flag ends
   * the episode or answers {@link INCORRECT_FLAG}, as configured. `skip` ends with 0.
   * Anything else is a shell command run in the task's folder.
   */
  override async step(action: string): Promise<StepResult> {
    const flag = submittedFlag(action);
    if (flag === undefined || !this.active) return this.track(await super.step(action));
    const task = this.currentTask;
    if (!task) return this.track(await super.step('submit'));
    this.flag = flag;
    const score = flagScore(flag, String(task.gold));
    if (score.reward === 1 || this.config.wrongFlag === 'end') {
      const result = this.track(await super.step('submit'));
      return result.truncated ? result : { ...result, observation: score.reward === 1 ? CORRECT_FLAG : INCORRECT_FLAG };
    }
    return {
      observation: INCORRECT_FLAG,
      reward: 0,
      terminated: false,
      truncated: false,
      info: { actionExecuted: true, exitCode: null, durationMs: 0, events: [], score },
    };
  }

  /** The flag submitted so far (a wrong one in `continue` mode is what a later score reads): carried by a checkpoint. */
  protected override envEpisodeState(): Record<string, unknown> {
    return this.flag === undefined ? {} : { flag: this.flag };
  }

  /** A restored episode is under way (a checkpoint needs one), with the flag its parent had submitted. */
  protected override resumeEnvEpisodeState(state: Readonly<Record<string, unknown>>): void {
    this.flag = typeof state['flag'] === 'string' ? state['flag'] : undefined;
    this.active = true;
  }

  /** A new CTF env of this configuration (its tasks, assets and wrong-flag mode), for SandboxEnv.fork. */
  protected override sibling(): CtfEnv {
    return new CtfEnv(this.config);
  }

  /** A shell in /ctf: tool mode's, and a pooled sandbox's until an episode takes it. */
  protected async openRunner(sandbox: Sandbox): Promise<CommandRunner> {
    return ShellSession.open(sandbox, this.config.shell, CTF_ROOT);
  }

  /** Copies the task's files to /ctf/<task_id>/ and gives the agent a new shell started there. */
  protected override async prepareEpisode(workspace: Workspace, task: Task | null): Promise<void> {
    if (!task) return;
    await workspace.sandbox.putArchive(await this.config.assets.archive(task), CTF_ROOT);
    const runner = await ShellSession.open(workspace.sandbox, this.config.shell, taskDirectory(task));
    workspace.runner.close();
    workspace.runner = runner;
  }

  /** The last flag submitted in this episode, scored; 0 when none was. */
  protected async score(episode: EpisodeState): Promise<Score> {
    return flagScore(this.flag ?? '', String(episode.task.gold));
  }

  private track(result: StepResult): StepResult {
    if (result.terminated || result.truncated) this.active = false;
    return result;
  }
}
