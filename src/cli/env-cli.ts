import type { Command } from 'commander';
import type { Task } from '../datasets/index.js';
import type { TaskEnv } from '../env/types.js';
import { ConfigError } from '../errors.js';
import type { EngineSet } from '../sandbox/multi/engine-set.js';
import type { RecordedEpisode } from '../trajectory/index.js';
import { addSandboxFlags, type EngineFlags } from './engine-flag.js';
import type { HarborTaskFiles } from '../../envs/task/harbor-writer.js';

/** Which command is asking: some defaults differ (bash replays in InterCode's exec mode). */
export type CliPurpose = 'play' | 'run' | 'replay' | 'eval' | 'collect' | 'serve';

/** Flags every env command shares; each env adds its own through its {@link EnvCli}. */
export interface CommonEnvFlags extends EngineFlags {
  data?: string;
  timeout?: string;
  trajectories?: string;
}

export interface CreateEnvsOptions {
  purpose: CliPurpose;
  /** Image build progress and notes go here (stderr in the CLI). */
  log: (line: string) => void;
  /** The engines the command's `--engine` flags name (see {@link commandEngines}): every env of the command shares them. */
  engines: EngineSet;
  /** `replay`: the recorded episodes, for envs that read how the recording was scored from its logs. */
  recording?: readonly RecordedEpisode[];
}

/**
 * What one environment contributes to the CLI: its own flags, and how to build envs from
 * the parsed flags. Each env keeps its adapter next to its code (envs/<name>/cli.ts); the
 * commands know nothing env-specific.
 */
export interface EnvCli {
  /** The name users type: `intercode play <name>`, `--env <name>`. */
  readonly name: string;
  /** Commander attribute names of the flags {@link addFlags} adds (for the "applies to" check). */
  readonly flagNames: readonly string[];
  /** Adds this env's own flags (the common ones are already there). */
  addFlags(command: Command): void;
  /** `count` ready envs sharing whatever can be shared (images, gold caches, servers). */
  createEnvs(flags: CommonEnvFlags & Record<string, unknown>, count: number, options: CreateEnvsOptions): Promise<TaskEnv[]>;
  /** The actions that solve `task` when played in order (the gold policy), ending with the submit. */
  goldActions(task: Task): string[];
  /** `export --format harbor`: `task` of `env` (one {@link createEnvs} made) as the files of a Harbor task directory; absent where the env is not exported. */
  harborTask?(env: TaskEnv, task: Task, flags: CommonEnvFlags & Record<string, unknown>): Promise<HarborTaskFiles>;
  /** Replay of ReAct (`on-submit`) files: the command InterCode's parser took from a recorded action. Default: the text inside `execute[…]`. */
  reactCommand?(action: string): string;
}

/** Adds the flags every env shares (`--engine`, `--runtime`, `--disk-limit` among them), then each env's own. */
export function addEnvFlags(command: Command, clis: readonly EnvCli[]): Command {
  addSandboxFlags(command)
    .option('--data <file>', 'task file: InterCode JSON, JSONL, CSV or TSV (default: the env\'s built-in tasks)')
    .option('--timeout <seconds>', 'time limit per action (default: the env\'s, 10 s for bash)')
    .option('--trajectories <dir>', 'write an InterCode-format log per finished episode here');
  for (const cli of clis) cli.addFlags(command);
  return command;
}

/**
 * The adapter named `name`.
 * @param command the parsed command, to tell flags the user gave from defaults.
 * @throws ConfigError naming `flag` and the known envs, or naming a flag given that belongs to another env.
 */
export function selectEnvCli(clis: readonly EnvCli[], flag: string, name: string, command: Command): EnvCli {
  const cli = clis.find((c) => c.name === name);
  if (!cli) throw new ConfigError(flag, `must be one of ${clis.map((c) => c.name).join(', ')}, got "${name}"`);
  for (const other of clis) {
    for (const key of other.flagNames) {
      if (cli.flagNames.includes(key) || command.getOptionValueSource(key) !== 'cli') continue;
      throw new ConfigError(`--${kebab(key)}`, `applies to ${other.name}, not ${name}`);
    }
  }
  return cli;
}

const kebab = (key: string) => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/**
 * What of a command's env flags makes two runs the same experiment (a resumed eval log or
 * rollout file must match it): the env, the task file and each of the env's own flags as a
 * JSON scalar. Where verified golds are kept (`--gold-cache-dir`) changes no result: left out.
 */
export function experimentSettings(cli: EnvCli, flags: CommonEnvFlags): Record<string, string | number | boolean | null> {
  const given = flags as unknown as Record<string, unknown>;
  const envFlags = cli.flagNames
    .filter((k) => k !== 'goldCacheDir')
    .map((k): [string, string | number | boolean | null] => {
      const v = given[k] ?? null;
      return [k, v === null || typeof v === 'boolean' || typeof v === 'number' ? v : String(v)];
    });
  return { env: cli.name, data: flags.data ?? null, ...Object.fromEntries(envFlags) };
}

/** @returns the flag's value as a positive integer. @throws ConfigError naming the flag. */
export function positiveInteger(flag: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new ConfigError(flag, `must be a positive integer, got "${value}"`);
  return n;
}

/** @returns seconds as milliseconds, or undefined when the flag was not given. @throws ConfigError. */
export function timeoutMs(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (!(seconds > 0)) throw new ConfigError('--timeout', `must be a positive number of seconds, got "${value}"`);
  return seconds * 1000;
}
