/**
 * Every environment the harness offers, in the order `--help` lists them: one line per env.
 * The library registry (`make`), the CLI's env commands, the agents' prompts, step scoring,
 * the trained policy's exploration and the image builds all read this list.
 */
import { registerEnv } from '../src/env/registry.js';
import { ConfigError } from '../src/errors.js';
import { bashPlugin } from './bash/plugin.js';
import { ctfPlugin } from './ctf/plugin.js';
import { jqPlugin } from './jq/plugin.js';
import type { EnvPlugin } from './plugin.js';
import { pythonPlugin } from './python/plugin.js';
import { sqlPlugin } from './sql/plugin.js';
import { taskPlugin } from './task/plugin.js';

export const ENV_PLUGINS: readonly EnvPlugin[] = [bashPlugin, sqlPlugin, pythonPlugin, ctfPlugin, taskPlugin, jqPlugin];

for (const plugin of ENV_PLUGINS) registerEnv(plugin.spec);

/** The fence tag of the env an InterCode log's `environment` field names (`ic_<name>`), as its prompt asks for; '' for none. */
export const recordedEnvFence = (environment: string): string => ENV_PLUGINS.find((p) => `ic_${p.name}` === environment)?.agent.prompt.fence ?? '';

/** The env named `name`. @throws ConfigError naming `flag` and the known envs. */
export function envPlugin(name: string, flag: string): EnvPlugin {
  const plugin = ENV_PLUGINS.find((p) => p.name === name);
  if (!plugin) throw new ConfigError(flag, `names env "${name}"; known: ${ENV_PLUGINS.map((p) => p.name).join(', ')}`);
  return plugin;
}

export type { CommonEnvFlags, CreateEnvsOptions, EnvAgentSide, EnvConstruction, EnvFlag, EnvHarborExport, EnvImage, EnvImages, EnvPlugin, EnvPurpose } from './plugin.js';

/** `export --format harbor` writes what an env's {@link EnvPlugin.harbor} gives as a task directory. */
export { writeHarborTask } from './task/harbor-writer.js';
