import { writeEpisodeLogs } from '../src/env/episode-log-writer.js';
import type { TaskEnv } from '../src/env/types.js';
import type { CommonEnvFlags, CreateEnvsOptions, EnvConstruction } from './plugin.js';

/**
 * `count` envs of `plugin` as a command steps them, on this thread or in a worker thread:
 * made by the plugin from `flags`, each writing an InterCode log per finished episode into
 * `flags.trajectories` when it names a folder (see EpisodeLogWriter).
 * @throws what the plugin throws; ConfigError when its envs cannot be logged (those made are closed).
 */
export async function createCommandEnvs(plugin: EnvConstruction, flags: CommonEnvFlags & Record<string, unknown>, count: number, options: CreateEnvsOptions): Promise<TaskEnv[]> {
  const envs = await plugin.createEnvs(flags, count, options);
  const dir = flags.trajectories;
  if (!dir) return envs;
  try {
    return envs.map((env) => writeEpisodeLogs(env, dir));
  } catch (error) {
    await Promise.all(envs.map((env) => env.close().catch(() => undefined)));
    throw error;
  }
}
