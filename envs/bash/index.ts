import { loadDataset } from '../../src/datasets/index.js';
import type { EnvSpec } from '../../src/env/registry.js';
import type { BuildLog } from '../../src/images/image-builder.js';
import { packagePath } from '../../src/package-path.js';
import { EngineSet } from '../../src/sandbox/backends/engine-set.js';
import type { ShellSessionOptions } from '../../src/sandbox/shell/shell-session.js';
import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS, type ResourceLimits } from '../../src/sandbox/types.js';
import { BashEnv, type ExecMode } from './bash-env.js';
import type { HashMode } from './file-probe.js';
import { bashGoldStore, GoldCache as GoldCacheImpl, type GoldCache } from './gold-cache.js';
import { bashTestbedRecipe, testbedTree, type BashBase } from './images.js';
import type { ResetMode } from './intercode-reset.js';
import type { ComparedGoldOutput } from './compared-gold-output.js';

export { BashEnv, type ExecMode } from './bash-env.js';
export { GoldCache, bashGoldStore, BASH_OUTCOME_CODEC } from './gold-cache.js';
export { parseResetMode, RESET_MODES, INTERCODE_RESET_SCRIPT, type ResetMode } from './intercode-reset.js';
export { parseComparedGoldOutput, detectComparedGoldOutput, COMPARED_GOLD_OUTPUTS, type ComparedGoldOutput } from './compared-gold-output.js';
export { bashReward, parseGitStatus, type BashOutcome, type FileChange } from './reward.js';
export { bashTestbedRecipe, bashRuntimeRecipe, testbedTree, type TestbedTree, parseBashBase, BASH_BASES, BUILTIN_TESTBED, type BashBase } from './images.js';

/** The project's own NL2Bash-style tasks over its own testbed. */
export const BUILTIN_BASH_TASKS = packagePath('datasets', 'bash', 'tasks.json');

export interface BashEnvOptions {
  /** Task file (InterCode JSON, JSONL, CSV, TSV). Default: the built-in tasks. `null`: tool mode. */
  data: string | null;
  /** Testbed: a tarball extracted at / (InterCode's fs-N.tar) or a directory placed at /testbed. Default: built-in. */
  testbed: string;
  /** The system the image is built on: `debian-bookworm` (default) or `ubuntu-jammy` (InterCode's). */
  base: BashBase;
  execMode: ExecMode;
  hashMode: HashMode;
  goldCache: boolean | GoldCache;
  /** Keep verified golds on disk here (see GoldStore) so later processes trust them without running them. Default: memory only. */
  goldCacheDir: string;
  /** How episodes start: `exact` (default) or InterCode's git-based `intercode` lifecycle (see {@link ResetMode}). */
  reset: ResetMode;
  /** Which part of the gold output the answer term compares: `full` (default) or `tail` (see {@link ComparedGoldOutput}). */
  comparedGoldOutput: ComparedGoldOutput;
  shell: Partial<ShellSessionOptions>;
  /** InterCode's shell for `intercode` exec mode: /bin/bash, or /bin/sh for its fs-0 image. */
  intercodeShell: string;
  limits: Partial<ResourceLimits>;
  seed: number;
  /** The Docker engine(s) sandboxes run on. Default: DOCKER_HOST or the local socket. */
  engines: EngineSet;
  /** Receives image build progress. */
  buildLog: BuildLog;
}

/** Builds the image if needed, loads the tasks and returns a ready {@link BashEnv}. */
export async function createBashEnv(options: Partial<BashEnvOptions> = {}): Promise<BashEnv> {
  return (await createBashEnvs(options, 1))[0]!;
}

/**
 * `count` envs sharing one gold cache (the one given, else a new one, on disk in
 * `goldCacheDir` when given) and one set of engines. What they share is prepared once: the
 * task file and testbed read first, then the image check (or build) and the engine connection together.
 */
export async function createBashEnvs(options: Partial<BashEnvOptions>, count: number): Promise<BashEnv[]> {
  const goldCache =
    options.goldCache === false
      ? false
      : options.goldCache instanceof GoldCacheImpl
        ? options.goldCache
        : new GoldCacheImpl(options.goldCacheDir ? bashGoldStore(options.goldCacheDir) : undefined);
  const engines = options.engines ?? EngineSet.local();
  // The task file and the testbed first: bad input fails before an engine is asked or an image built.
  const dataset = options.data === null ? [] : await loadDataset(options.data ?? BUILTIN_BASH_TASKS);
  const recipe = await bashTestbedRecipe(options.testbed, options.base);
  const [image, runtime, tree] = await Promise.all([
    engines.ensureImage(recipe, options.buildLog ?? (() => undefined)),
    engines.runtime(),
    options.reset === 'intercode' ? testbedTree(options.testbed) : undefined,
  ]);
  const imageId = await engines.imageId(image);
  const config = {
    runtime,
    spec: { image, hostname: 'intercode', limits: { ...DEFAULT_LIMITS, ...options.limits }, capabilities: DEFAULT_CAPABILITIES },
    dataset,
    execMode: options.execMode ?? 'session',
    hashMode: options.hashMode ?? 'intercode',
    goldCache,
    reset: options.reset ?? 'exact',
    ...(tree ? { testbedTree: tree } : {}),
    comparedGoldOutput: options.comparedGoldOutput ?? 'full',
    ...(imageId ? { imageId } : {}),
    ...(options.shell ? { shell: options.shell } : {}),
    ...(options.intercodeShell ? { intercodeShell: options.intercodeShell } : {}),
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
  } as const;
  return Array.from({ length: count }, () => new BashEnv(config));
}

export const bashEnvSpec: EnvSpec<BashEnvOptions> = {
  id: 'intercode/bash-v1',
  description: 'NL2Bash tasks over a testbed file tree; InterCode bash reward',
  create: createBashEnv,
};
