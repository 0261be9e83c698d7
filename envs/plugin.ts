/**
 * The contract of an environment: one descriptor per env (envs/<name>/plugin.ts), listed
 * once in envs/index.ts. Everything outside envs/ reads an env's facts from its descriptor
 * (construction, flags and gold actions; what agents, the trainer, the image commands and
 * the Harbor export each read) and never names an env.
 */

import type { EnvAgentFacts } from '../src/agents/index.js';
import type { Task } from '../src/datasets/index.js';
import type { EnvSpec } from '../src/env/registry.js';
import type { TaskEnv } from '../src/env/types.js';
import type { ImageRecipe } from '../src/images/recipe.js';
import type { EngineSet } from '../src/sandbox/backends/engine-set.js';
import type { RecordedEpisode } from '../src/trajectory/index.js';
import type { EnvTrainingFacts } from '../src/env/training-facts.js';
import type { HarborTaskFiles } from './task/harbor-writer.js';

/** Which command is asking: some defaults differ (bash replays in InterCode's exec mode). */
export type EnvPurpose = 'play' | 'run' | 'replay' | 'eval' | 'collect' | 'serve';

/** Flags every env command shares (parsed by the CLI); each env adds its own through {@link EnvConstruction.flags}. */
export interface CommonEnvFlags {
  data?: string;
  timeout?: string;
  trajectories?: string;
}

/**
 * One command-line flag of an env, as data (the CLI turns it into a commander option):
 * `--name <value>` takes a value, `--name` is a switch, `--no-name` turns a default-on
 * switch off. The parsed value reaches {@link EnvConstruction.createEnvs} under the camel-cased name.
 */
export interface EnvFlag {
  /** Commander's flag syntax, e.g. `--wrong-flag <mode>`. */
  flags: string;
  description: string;
  /** The flag may be given several times; its values arrive as a list, in order. */
  repeatable?: true;
  /** False for a flag that changes no result (a cache's folder): left out of what makes two runs the same experiment. */
  changesResults?: false;
}

export interface CreateEnvsOptions {
  purpose: EnvPurpose;
  /** Image build progress and notes go here (stderr in the CLI). */
  log: (line: string) => void;
  /** The engines the command's `--engine` flags name: every env of the command shares them. */
  engines: EngineSet;
  /** `replay`: the recorded episodes, for envs that read how the recording was scored from its logs. */
  recording?: readonly RecordedEpisode[];
}

/**
 * How an env's episodes are made and solved: all that the commands which play episodes
 * (run, eval, collect, train, replay, serve, play) need of it, and all that a worker thread
 * that makes its share of the envs reads.
 */
export interface EnvConstruction {
  /** The name users type: `intercode play <name>`, `--env <name>`. */
  readonly name: string;
  /** The library's registration (`make('intercode/<name>-v1')`). */
  readonly spec: EnvSpec<never>;
  /** The task file it plays without `--data`, where it has one file of its own (how `run` tells a task file of another env). */
  readonly builtInTasks?: string;
  /** This env's own flags (the common ones are the CLI's). */
  readonly flags: readonly EnvFlag[];
  /** `count` ready envs sharing whatever can be shared (images, gold caches, servers). */
  createEnvs(flags: CommonEnvFlags & Record<string, unknown>, count: number, options: CreateEnvsOptions): Promise<TaskEnv[]>;
  /** The actions that solve `task` when played in order (the gold policy), ending with the submit. */
  goldActions(task: Task): string[];
  /**
   * Episodes in flight when --parallel is not given, where this env sustains more than one per
   * CPU core (measured; see docs/performance.md); undefined: the scheduler's default.
   */
  defaultParallel?(flags: CommonEnvFlags & Record<string, unknown>): number | undefined;
}

/** What LLM strategies and their evaluation read of the env ({@link EnvAgentFacts}), and how a replay reads its recorded actions. */
export interface EnvAgentSide extends EnvAgentFacts {
  /** Replay of ReAct (`on-submit`) files: the command InterCode's parser took from a recorded action. Default: the text inside `execute[…]`. */
  reactCommand?(action: string): string;
}

/** The images an env's commands build on first use, as `images build`, `setup` and `doctor` list and build them. */
export interface EnvImages {
  /** `testbed` is `images build --testbed` for an env whose image holds one. Empty where none can be known ahead (then {@link perTask} says why). */
  list(options: { testbed?: string }): readonly EnvImage[];
  /** Images made per task, which cannot be listed ahead, in words for `doctor` (e.g. one per Harbor task directory). */
  readonly perTask?: string;
}

/** `export --format harbor`: an env's tasks as Harbor task directories. */
export interface EnvHarborExport {
  /** `task` of `env` (one {@link EnvConstruction.createEnvs} made) as the files of a Harbor task directory. */
  task(env: TaskEnv, task: Task, flags: CommonEnvFlags & Record<string, unknown>): Promise<HarborTaskFiles>;
}

/**
 * Everything the harness knows of one environment: how it is made ({@link EnvConstruction}),
 * and one part for each other reader, so that each takes only its own: the LLM strategies,
 * the in-process trainer, the image commands, the Harbor export.
 */
export interface EnvPlugin extends EnvConstruction {
  readonly agent: EnvAgentSide;
  readonly training: EnvTrainingFacts;
  readonly images: EnvImages;
  /** Absent where the env is not exported. */
  readonly harbor?: EnvHarborExport;
}

/** One image an env's commands use, as `images build`, `setup` and `doctor` name it. */
export interface EnvImage {
  /** Its name in lists and for `images build`: the env's own name for its main image, `<env>:<variant>` for another. */
  readonly name: string;
  /** Which runs use it, for doctor's report (e.g. `replay's default system`). */
  readonly usedBy: string;
  /**
   * Built by `setup` and a plain `images build`; false for one most users never need (a second
   * system, bootstrapped from another distribution's mirror): built by `images build --all` or on first use.
   */
  readonly byDefault: boolean;
  recipe(): Promise<ImageRecipe>;
}
