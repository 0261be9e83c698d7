/**
 * A command's envs made in worker threads (`collect --threads`, `train --threads`): each
 * thread's share is made by the env's plugin exactly as the command makes its envs on its
 * own thread, from the same flags, with the thread's own engine set over the command's
 * engines (its own connections, gold cache and warm pool: see startThreadedEnvs).
 */
import { threadId } from 'node:worker_threads';
import type { TaskEnv } from '../src/env/types.js';
import type { EngineTarget } from '../src/sandbox/backends/backend.js';
import { EngineSet } from '../src/sandbox/backends/engine-set.js';
import type { SandboxSettings } from '../src/sandbox/types.js';
import type { EnvFactorySpec } from '../src/vec/shard-protocol.js';
import { createCommandEnvs } from './command-envs.js';
import { envPlugin } from './index.js';
import type { EnvPurpose } from './plugin.js';

/** What a thread needs to make its envs: plain data, copied to it. */
export interface PluginShardOptions {
  /** The env's name (`--env`). */
  env: string;
  /** The command's flags, as its plugin reads them. */
  flags: Record<string, unknown>;
  purpose: EnvPurpose;
  /** The command's engines (`--engine`) and what every sandbox is made with (`--runtime`, `--disk-limit`). */
  targets: readonly EngineTarget[];
  sandboxes: SandboxSettings;
}

/** The factory a worker thread calls (see {@link EnvFactorySpec}): `count` envs of the plugin `options.env` names. */
export async function pluginShardEnvs(options: PluginShardOptions, count: number): Promise<TaskEnv[]> {
  const log = (line: string) => process.stderr.write(`[thread ${threadId}] ${line}\n`);
  const engines = new EngineSet(options.targets, { log, sandboxes: options.sandboxes });
  return createCommandEnvs(envPlugin(options.env, '--env'), options.flags, count, { purpose: options.purpose, log, engines });
}

/** Where {@link pluginShardEnvs} is found from a worker thread. */
export function pluginShardFactory(options: PluginShardOptions): EnvFactorySpec {
  // Commander's flag values are strings, booleans and arrays of strings: a JSON copy keeps them all and drops what a thread could not receive.
  return { module: 'envs/plugin-shards.js', name: 'pluginShardEnvs', options: { ...options, flags: JSON.parse(JSON.stringify(options.flags)) as Record<string, unknown> } };
}
