import type { Command } from 'commander';
import { createCommandEnvs } from '../../envs/command-envs.js';
import type { CommonEnvFlags, EnvConstruction, EnvPurpose } from '../../envs/index.js';
import type { Task } from '../datasets/index.js';
import { describeScheduler, EpisodeScheduler, type SandboxMode } from '../scheduler/index.js';
import type { TaskEnv } from '../env/types.js';
import { ConfigError } from '../errors.js';
import { positiveInteger } from '../env/flag-values.js';
import { backendOf } from '../sandbox/backends/backends.js';
import type { EngineStatus } from '../sandbox/backends/backend.js';
import type { EngineSet } from '../sandbox/backends/engine-set.js';
import type { SandboxRuntime } from '../sandbox/types.js';
import type { RecordedEpisode } from '../trajectory/index.js';
import { commandEngines, engineTargets, releaseEngines, sandboxSettings, type EngineFlags } from './engine-flag.js';
import { schedulerFlags, type SchedulerFlags } from './scheduler-flags.js';

/** Commander attribute of `--threads`. */
export interface ThreadsFlags {
  threads?: string;
}

/** Adds `--threads <n>` to a command whose envs {@link openCommandScheduler} makes. */
export function addThreadsFlag(command: Command): Command {
  return command.option(
    '--threads <n>',
    'worker threads the envs are stepped on (piscina): each makes its share of --parallel with its own engine connections, gold cache and warm pool, ' +
      'and steps them on its own event loop; 1 (default, measured: docs/performance.md): every env on the main thread',
    '1',
  );
}

/** How a command plays its episodes: its engine flags' checked values, and `--threads`. */
export interface CommandSchedulerSettings {
  parallel: number;
  sandboxes: SandboxMode;
  keepWarmMs: number;
  threads: number;
}

/** The flags a command's {@link openCommandScheduler} reads. */
export type CommandSchedulerFlags = CommonEnvFlags & EngineFlags & SchedulerFlags & ThreadsFlags & Record<string, unknown>;

/**
 * The checked values of a command's `--parallel` (default: the env's own where it sustains
 * more, see EnvConstruction.defaultParallel), `--sandboxes`, `--keep-warm` and `--threads` (1
 * where the command has no such flag).
 * @throws ConfigError naming the flag.
 */
export function commandSchedulerSettings(plugin: EnvConstruction, flags: CommandSchedulerFlags): CommandSchedulerSettings {
  return { ...schedulerFlags(flags, plugin.defaultParallel?.(flags)), threads: threadCount(flags) };
}

/** `--threads`, checked (1 where the command has no such flag). @throws ConfigError naming it. */
export function threadCount(flags: ThreadsFlags): number {
  return positiveInteger('--threads', flags.threads ?? '1');
}

/** What the sandboxes of a command were (`--sandbox-kind auto` picks by the engine), said in its figures; none: its envs used no engine. */
export type SandboxKindShown = 'episode-roots' | 'containers' | 'pods' | 'none';

/** A command's episode scheduler, and what to ask and call around it. */
export interface CommandScheduler {
  scheduler: EpisodeScheduler;
  /** The envs' tasks (every env of a command has the same). */
  tasks: readonly Task[];
  /** What the envs' sandboxes were; undefined with --threads (each thread's engines decide, as this thread's would). */
  sandboxKind(): Promise<SandboxKindShown | undefined>;
  /** With several engines, each one's counts (on this thread's engines: undefined with --threads, whose engines are the threads'). */
  engineStatus(): EngineStatus[] | undefined;
  /** Stops the engines' health checks (after the scheduler's envs are closed). */
  releaseEngines(): void;
}

/** What a command asks of its envs besides their number. */
export interface CommandEnvsOptions {
  /** `replay`: the recorded episodes (envs on this thread only). */
  recording?: readonly RecordedEpisode[];
  /** Close the envs beyond the dataset's number of tasks before the scheduler starts (`run`: each task is played once). */
  atMostOnePerTask?: boolean;
}

/**
 * The episode scheduler of a command over `settings.parallel` envs of `plugin`: on this thread
 * (`threads` 1), or in worker threads, each thread's envs made by the plugin from the same
 * flags (see pluginShardEnvs) and on a warm pool of that thread's own. What every command
 * that plays episodes does between its flags and its first episode, in one place.
 * @throws ConfigError for --threads with --sandboxes fresh, a Kubernetes engine or a recording; what making the envs threw (the engines released).
 */
export async function openCommandScheduler(
  plugin: EnvConstruction,
  flags: CommandSchedulerFlags,
  settings: CommandSchedulerSettings,
  purpose: EnvPurpose,
  log: (line: string) => void,
  options: CommandEnvsOptions = {},
): Promise<CommandScheduler> {
  const { parallel, sandboxes, keepWarmMs, threads } = settings;
  if (threads === 1) {
    const { envs, engines, release } = await openCommandEnvs(plugin, flags, parallel, purpose, log, options);
    const used = options.atMostOnePerTask ? await atMostOnePerTask(envs) : envs;
    const scheduler = new EpisodeScheduler(used, { sandboxes, keepWarmMs });
    log(describeScheduler(scheduler));
    return { scheduler, tasks: used[0]!.tasks, sandboxKind: async () => (engines.connected ? kindOfSandboxes(await engines.runtime()) : 'none'), engineStatus: () => engines.status(), releaseEngines: release };
  }
  if (sandboxes === 'fresh') throw new ConfigError('--threads', 'puts each thread\'s envs on a warm pool of its own: use it with --sandboxes pooled (the default)');
  if (options.recording) throw new ConfigError('--threads', 'replays on one thread (use --threads 1)');
  const targets = engineTargets(flags);
  // A thread that dies has its sandboxes removed by label from the main thread: on Docker engines.
  if (targets.some((target) => backendOf(target.endpoint).name !== 'docker')) throw new ConfigError('--threads', 'needs Docker engines (--engine k8s…: use --threads 1)');
  // Loaded here: a command on one thread (the default) never loads the thread pool.
  const [{ startThreadedEnvs }, { pluginShardFactory }] = await Promise.all([import('../vec/threaded-envs.js'), import('../../envs/plugin-shards.js')]);
  const envs = await startThreadedEnvs({
    threads,
    count: parallel,
    factory: pluginShardFactory({ env: plugin.name, flags, purpose, targets, sandboxes: sandboxSettings(flags) }),
    pool: { keepWarmMs },
    engines: targets.map((target) => target.endpoint),
  });
  const used = options.atMostOnePerTask ? await atMostOnePerTask(envs) : envs;
  const scheduler = new EpisodeScheduler(used, { sandboxes, keepWarmMs });
  log(`episode scheduler: ${used.length} env(s) in ${Math.min(threads, used.length)} worker threads, each stepping its share on its own event loop with its own engine connections and warm pool`);
  return {
    scheduler,
    tasks: used[0]!.tasks,
    sandboxKind: async () => undefined,
    engineStatus: () => undefined,
    releaseEngines: () => undefined,
  };
}

/** A command's envs stepped by the command itself (play, export, serve), and what to call once they are closed. */
export interface CommandEnvs {
  envs: TaskEnv[];
  engines: EngineSet;
  /** Stops the engines' health checks; with several, logs how many sandboxes each took. */
  release(): void;
}

/**
 * `count` envs of `plugin` on this thread, over the engines the command's flags name.
 * @throws what making the envs threw, after the engines are released.
 */
export async function openCommandEnvs(plugin: EnvConstruction, flags: CommonEnvFlags & EngineFlags & Record<string, unknown>, count: number, purpose: EnvPurpose, log: (line: string) => void, options: Pick<CommandEnvsOptions, 'recording'> = {}): Promise<CommandEnvs> {
  const engines = commandEngines(flags, log);
  const release = () => releaseEngines(engines, log);
  try {
    const envs = await createCommandEnvs(plugin, flags, count, { purpose, log, engines, ...(options.recording ? { recording: options.recording } : {}) });
    return { envs, engines, release };
  } catch (error) {
    release();
    throw error;
  }
}

/** No more envs (and pooled sandboxes) than tasks: the rest would only be set up and removed. */
async function atMostOnePerTask(envs: TaskEnv[]): Promise<TaskEnv[]> {
  const used = envs.slice(0, Math.max(1, Math.min(envs.length, envs[0]!.tasks.length)));
  await Promise.all(envs.slice(used.length).map((env) => env.close()));
  return used;
}

function kindOfSandboxes(runtime: SandboxRuntime): Exclude<SandboxKindShown, 'none'> {
  return runtime.freshRoots ? 'episode-roots' : runtime.name === 'kubernetes' ? 'pods' : 'containers';
}
