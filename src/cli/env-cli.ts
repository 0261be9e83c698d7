import { Help, Option, type Command } from 'commander';
import type { CommonEnvFlags as EnvCommonFlags, EnvConstruction, EnvFlag, EnvPlugin } from '../../envs/index.js';
import { ConfigError } from '../errors.js';
import { addSandboxFlags, type EngineFlags } from './engine-flag.js';

/** Flags every env command shares; each env adds its own (its {@link EnvConstruction.flags}). */
export interface CommonEnvFlags extends EnvCommonFlags, EngineFlags {}

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** The commander option an env's flag describes. */
function envOption(flag: EnvFlag): Option {
  const option = new Option(flag.flags, flag.description);
  return flag.repeatable ? option.argParser(collect) : option;
}

/** Commander attribute names of an env's flags (how their values arrive). */
export const envFlagNames = (plugin: EnvConstruction): string[] => plugin.flags.map((f) => new Option(f.flags).attributeName());

/** The heading env flags are listed under in `--help`, after the flags every env shares. */
export const ENV_FLAGS_HEADING = 'Env options (each for the envs its description names; `--help` after an env name shows that env\'s only):';

/** The env a command line names so far: `--env NAME`, else the `<env>` argument; undefined when none. */
function namedEnv(command: Command): string | undefined {
  const option = command.opts().env;
  if (typeof option === 'string') return option;
  return command.registeredArguments[0]?.name() === 'env' ? command.args[0] : undefined;
}

/**
 * Adds the flags every env shares (`--engine`, `--runtime`, `--disk-limit` among them), then
 * each env's own under {@link ENV_FLAGS_HEADING}. `--help` after an env name (`run bash
 * --help`, `eval --env sql --help`) lists the shared flags and that env's only.
 */
export function addEnvFlags(command: Command, plugins: readonly EnvConstruction[]): Command {
  addSandboxFlags(command)
    .option('--data <file>', 'task file: InterCode JSON, JSONL, CSV or TSV (default: the env\'s built-in tasks)')
    .option('--timeout <seconds>', 'time limit per action (default: the env\'s, 10 s for bash)')
    .option('--trajectories <dir>', 'write an InterCode-format log per finished episode here');
  // A flag several envs share (bash's and sql's gold cache) is one option, added once.
  const added = new Set<string>();
  for (const plugin of plugins) {
    for (const flag of plugin.flags) {
      if (added.has(flag.flags)) continue;
      added.add(flag.flags);
      command.addOption(envOption(flag).helpGroup(ENV_FLAGS_HEADING));
    }
  }
  command.configureHelp({
    visibleOptions(this: Help, cmd: Command) {
      const all = Help.prototype.visibleOptions.call(this, cmd);
      const plugin = plugins.find((p) => p.name === namedEnv(cmd));
      if (!plugin) return all;
      const own = new Set(plugin.flags.map((f) => f.flags));
      const foreign = new Set(plugins.flatMap((p) => p.flags.filter((f) => !own.has(f.flags)).map((f) => new Option(f.flags).attributeName())));
      return all.filter((option) => !foreign.has(option.attributeName()));
    },
  });
  return command;
}

/**
 * The env named `name`.
 * @param command the parsed command, to tell flags the user gave from defaults.
 * @throws ConfigError naming `flag` and the known envs, or naming a flag given that belongs to another env.
 */
export function selectEnvPlugin(plugins: readonly EnvPlugin[], flag: string, name: string, command: Command): EnvPlugin {
  const plugin = plugins.find((c) => c.name === name);
  if (!plugin) throw new ConfigError(flag, `must be one of ${plugins.map((c) => c.name).join(', ')}, got "${name}"`);
  const own = envFlagNames(plugin);
  for (const other of plugins) {
    for (const key of envFlagNames(other)) {
      if (own.includes(key) || command.getOptionValueSource(key) !== 'cli') continue;
      throw new ConfigError(`--${kebab(key)}`, `applies to ${other.name}, not ${name}`);
    }
  }
  return plugin;
}

const kebab = (key: string) => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/**
 * What of a command's env flags makes two runs the same experiment (a resumed eval log or
 * rollout file must match it): the env, the task file and each of the env's own flags as a
 * JSON scalar, but those that change no result (where verified golds are kept).
 */
export function experimentSettings(plugin: EnvConstruction, flags: CommonEnvFlags): Record<string, string | number | boolean | null> {
  const given = flags as unknown as Record<string, unknown>;
  const envFlags = plugin.flags
    .filter((f) => f.changesResults !== false)
    .map((f): [string, string | number | boolean | null] => {
      const k = new Option(f.flags).attributeName();
      const v = given[k] ?? null;
      return [k, v === null || typeof v === 'boolean' || typeof v === 'number' ? v : String(v)];
    });
  return { env: plugin.name, data: flags.data ?? null, ...Object.fromEntries(envFlags) };
}
