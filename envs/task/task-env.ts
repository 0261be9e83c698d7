import { chooseTask, seededRandom } from '../../src/env/episode.js';
import type { EpisodeState, SandboxEnvConfig } from '../../src/env/sandbox-env-types.js';
import { SandboxEnv } from '../../src/env/sandbox-env.js';
import { otherImage } from '../../src/env/checkpoint/index.js';
import type { ResetOptions, ResetResult, Score, StepResult } from '../../src/env/types.js';
import { CheckpointError, EnvStateError } from '../../src/errors.js';
import type { Task } from '../../src/datasets/index.js';
import { ShellSession, type ShellSessionOptions } from '../../src/sandbox/shell/shell-session.js';
import type { CommandRunner } from '../../src/sandbox/shell/types.js';
import type { Sandbox, SandboxSpec } from '../../src/sandbox/types.js';
import type { ImageWorkspaces } from './image-workspaces.js';
import type { TaskDir } from './task-dir.js';
import { runVerifier, type TestsArchives } from './verifier.js';

/** A task directory ready to play: where it lives, its sandbox spec, its shell's starting directory. */
export interface PreparedTask {
  dir: TaskDir;
  spec: SandboxSpec;
  workdir: string;
}

/** What the envs of one dataset share: tasks by id, their images' workspaces, the packed tests. */
export interface TaskDirShared {
  tasks: ReadonlyMap<string, PreparedTask>;
  /** The starting directory of each image's shell, by image tag. */
  workdirs: ReadonlyMap<string, string>;
  workspaces: ImageWorkspaces;
  tests: TestsArchives;
  /** Envs not closed yet: the last to close closes the workspaces. */
  open: number;
}

export interface TaskDirEnvConfig extends SandboxEnvConfig {
  shared: TaskDirShared;
  shell: Partial<ShellSessionOptions>;
}

/**
 * Harbor task directories as an env: each task's sandbox comes from its own image (built
 * from its environment/), the agent acts through a persistent shell started in the
 * Dockerfile's WORKDIR, `submit` ends the episode and runs the task's verifier (see
 * {@link runVerifier}: the agent's processes are killed first, /tests and /logs/verifier
 * are made afresh, so nothing the agent did can stand in for the verifier's reward). A
 * verifier that times out or writes no number ends the episode truncated, with its reason.
 */
export class TaskDirEnv extends SandboxEnv {
  readonly id = 'intercode/task-v1';
  readonly logName = 'harbor_task';
  private readonly pick: () => number;
  private selected: SandboxSpec;
  /** When the episode's agent time runs out (performance.now() ms), for a task with `[agent] timeout_sec`. */
  private agentDeadline: { at: number; limitSec: number } | undefined;

  constructor(protected override readonly config: TaskDirEnvConfig) {
    super(config);
    this.pick = seededRandom(config.seed ?? Date.now());
    this.selected = config.spec;
    this.useWorkspaces(config.shared.workspaces.sourceFor(() => this.selected));
  }

  /** The episode's sandbox comes from the pool of its task's image. */
  override async reset(options: ResetOptions = {}): Promise<ResetResult> {
    const task = chooseTask(options, this.tasks, this.pick);
    if (!task) throw new EnvStateError('the task env has no tasks: give it a folder of task directories');
    const prepared = this.config.shared.tasks.get(task.id);
    if (!prepared) throw new EnvStateError(`task "${task.id}" is not one of this env's task directories`);
    this.selected = prepared.spec;
    this.agentDeadline = undefined;
    const result = await super.reset({ task });
    const limitSec = prepared.dir.config.agent.timeoutSec;
    this.agentDeadline = limitSec === undefined ? undefined : { at: performance.now() + limitSec * 1000, limitSec };
    return result;
  }

  /**
   * As Harbor: the agent has its task's `[agent] timeout_sec` in all. An action runs for at
   * most the time left; once it is over (after an action, or at the next one), the episode
   * ends as if submitted: the verifier scores what the agent left, and the score's details
   * say `agentTimeout`.
   */
  override async step(action: string): Promise<StepResult> {
    const verb = action.trim();
    const deadline = this.agentDeadline;
    if (deadline === undefined || verb === 'submit' || verb === 'skip') return super.step(action);
    let observation: string | undefined;
    if (performance.now() < deadline.at) {
      const result = await super.step(action);
      if (result.terminated || result.truncated || performance.now() < deadline.at) return result;
      observation = result.observation;
    }
    const note = `[intercode: the task's agent time limit (${deadline.limitSec} s) is over: the verifier scored the episode]`;
    const ended = await super.step('submit');
    const score = ended.info.score && { ...ended.info.score, details: { ...ended.info.score.details, agentTimeout: { limitSec: deadline.limitSec } } };
    return { ...ended, observation: observation === undefined ? note : `${observation}${observation.endsWith('\n') || observation === '' ? '' : '\n'}${note}`, info: { ...ended.info, ...(score ? { score } : {}) } };
  }

  protected override actionTimeoutMs(): number | undefined {
    if (this.agentDeadline === undefined) return undefined;
    const left = Math.max(1, Math.ceil(this.agentDeadline.at - performance.now()));
    return left < (this.config.shell.timeoutMs ?? Infinity) ? left : undefined;
  }

  /** Not offered: the verifier runs once, after the agent's processes are gone (it would otherwise show the agent /tests). */
  override async peekScore(): Promise<Score> {
    throw new EnvStateError("a task directory's verifier runs once, when the episode ends: it cannot score an episode still under way");
  }

  /** The agent time left at checkpoint time, for a task with `[agent] timeout_sec`: a restored episode has that much left. */
  protected override envEpisodeState(): Record<string, unknown> {
    const deadline = this.agentDeadline;
    return deadline === undefined ? {} : { agentTimeLeftMs: Math.max(0, deadline.at - performance.now()), agentLimitSec: deadline.limitSec };
  }

  protected override resumeEnvEpisodeState(state: Readonly<Record<string, unknown>>): void {
    const left = state['agentTimeLeftMs'];
    const limitSec = state['agentLimitSec'];
    this.agentDeadline = typeof left === 'number' && typeof limitSec === 'number' ? { at: performance.now() + left, limitSec } : undefined;
  }

  /**
   * A checkpoint continues here only when its task is one of this env's task directories and
   * its sandbox is of that task's image (the verifier run on submit is that directory's).
   * @throws CheckpointError CHECKPOINT_REFUSED otherwise (reason `other-task` or `other-image`).
   */
  protected override checkRestorable(spec: SandboxSpec, task: Task | null): void {
    const prepared = task ? this.config.shared.tasks.get(task.id) : undefined;
    if (!prepared) throw new CheckpointError('CHECKPOINT_REFUSED', `the checkpoint's task ${task?.id ?? '(none)'} is not one of this env's task directories`, { details: { reason: 'other-task', task: task?.id ?? null } });
    if (spec.image !== prepared.spec.image) throw otherImage(spec.image, prepared.spec.image);
  }

  /** A new env over the same task directories and workspaces (counted as open until it closes), for SandboxEnv.fork. */
  protected override sibling(): TaskDirEnv {
    this.config.shared.open += 1;
    return new TaskDirEnv(this.config);
  }

  protected async openRunner(sandbox: Sandbox): Promise<CommandRunner> {
    return ShellSession.open(sandbox, this.config.shell, this.config.shared.workdirs.get(sandbox.spec.image) ?? '/');
  }

  /** Runs the task's verifier (see {@link runVerifier}); throws EpisodeUnscorableError when it gives no reward. */
  protected async score(episode: EpisodeState): Promise<Score> {
    const prepared = this.config.shared.tasks.get(episode.task.id)!;
    const tests = await this.config.shared.tests.get(prepared.dir);
    return runVerifier(episode.sandbox, prepared.dir, tests, prepared.workdir, [episode.control.pid]);
  }

  private closed = false;

  override async close(): Promise<void> {
    await super.close();
    if (this.closed) return;
    this.closed = true;
    const shared = this.config.shared;
    shared.open -= 1;
    if (shared.open === 0) await shared.workspaces.close();
  }
}

/** The gold of a task: its solution/ copied to /solution and solve.sh run there, as Harbor's oracle does. */
export function goldAction(solutionTar: Buffer): string {
  return `mkdir -p /solution && printf %s '${solutionTar.toString('base64')}' | base64 -d | tar -x -C /solution && bash /solution/solve.sh`;
}

