import type { Command } from 'commander';
import type { CommonEnvFlags, EnvPlugin, EnvPurpose } from '../../envs/index.js';
import { pluginShardFactory } from '../../envs/plugin-shards.js';
import { describeEngine, EpisodeEngine, type SandboxMode } from '../engine/index.js';
import { ConfigError } from '../errors.js';
import { positiveInteger } from '../env/flag-values.js';
import { backendOf } from '../sandbox/multi/backends.js';
import { startThreadedEnvs } from '../vec/threaded-envs.js';
import { commandEngines, engineTargets, releaseEngines, sandboxSettings, type EngineFlags } from './engine-flag.js';

/** Commander attribute of `--threads`. */
export interface ThreadsFlags {
  threads?: string;
}

/** Adds `--threads <n>` to a command whose envs {@link openCommandEngine} makes. */
export function addThreadsFlag(command: Command): Command {
  return command.option(
    '--threads <n>',
    'worker threads the envs are stepped on (piscina): each makes its share of --parallel with its own engine connections, gold cache and warm pool, ' +
      'and steps them on its own event loop; 1 (default, measured: docs/performance.md): every env on the main thread',
    '1',
  );
}

/** How a command plays its episodes: its engine flags' checked values, and `--threads`. */
export interface CommandEngineSettings {
  parallel: number;
  sandboxes: SandboxMode;
  keepWarmMs: number;
  threads: number;
}

/** A command's episode engine, and what to call once the engine is closed. */
export interface CommandEngine {
  engine: EpisodeEngine;
  /** Stops the engines' health checks (after the engine's envs are closed). */
  releaseEngines(): void;
}

/** `--threads`, checked. @throws ConfigError naming it. */
export function threadCount(flags: ThreadsFlags): number {
  return positiveInteger('--threads', flags.threads ?? '1');
}

/**
 * The episode engine of a command over `settings.parallel` envs of `plugin`: on this thread
 * (`threads` 1), or in worker threads, each thread's envs made by the plugin from the same
 * flags (see pluginShardEnvs) and on a warm pool of that thread's own.
 * @throws ConfigError for --threads with --sandboxes fresh or a Kubernetes engine; what making the envs threw.
 */
export async function openCommandEngine(
  plugin: EnvPlugin,
  flags: CommonEnvFlags & EngineFlags & Record<string, unknown>,
  settings: CommandEngineSettings,
  purpose: EnvPurpose,
  log: (line: string) => void,
): Promise<CommandEngine> {
  const { parallel, sandboxes, keepWarmMs, threads } = settings;
  if (threads === 1) {
    const engines = commandEngines(flags, log);
    const envs = await plugin.createEnvs(flags, parallel, { purpose, log, engines });
    const engine = new EpisodeEngine(envs, { sandboxes, keepWarmMs });
    log(describeEngine(engine));
    return { engine, releaseEngines: () => releaseEngines(engines, log) };
  }
  if (sandboxes === 'fresh') throw new ConfigError('--threads', 'puts each thread\'s envs on a warm pool of its own: use it with --sandboxes pooled (the default)');
  const targets = engineTargets(flags);
  // A thread that dies has its sandboxes removed by label from the main thread: on Docker engines.
  if (targets.some((target) => backendOf(target.endpoint).name !== 'docker')) throw new ConfigError('--threads', 'needs Docker engines (--engine k8s…: use --threads 1)');
  const envs = await startThreadedEnvs({
    threads,
    count: parallel,
    factory: pluginShardFactory({ env: plugin.name, flags, purpose, targets, sandboxes: sandboxSettings(flags) }),
    pool: { keepWarmMs },
    engines: targets.map((target) => target.endpoint),
  });
  const engine = new EpisodeEngine(envs, { sandboxes, keepWarmMs });
  log(`episode engine: ${parallel} env(s) in ${Math.min(threads, parallel)} worker threads, each stepping its share on its own event loop with its own engine connections and warm pool`);
  return { engine, releaseEngines: () => undefined };
}
