import { loadDataset } from '../../src/datasets/index.js';
import type { EnvSpec } from '../../src/env/registry.js';
import type { BuildLog } from '../../src/images/image-builder.js';
import { packagePath } from '../../src/package-path.js';
import { EngineSet } from '../../src/sandbox/backends/engine-set.js';
import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS, type ResourceLimits } from '../../src/sandbox/types.js';
import { pythonRecipe } from './images.js';
import { PythonEnv } from './python-env.js';
import type { PythonSessionOptions } from './python-session.js';
import type { EntryRule } from './python-task.js';

export { PythonEnv, APPS_DEFAULT_FUNCTION, type PythonEnvConfig } from './python-env.js';
export { PythonSession, type PythonSessionOptions, type RanAction } from './python-session.js';
export { PythonScorer, type ScoreRequest, type ScoreReply, type MbppOutcome, type AppsOutcome } from './python-scorer.js';
export { FrameReader, type FrameEvent, type FrameObject } from './frame-reader.js';
export { toPythonTask, goldEntry, definedFunctions, type PythonTask, type EntryRule } from './python-task.js';
export { mbppReward, appsReward, type PythonReward, type TestVerdict } from './reward.js';
export { pythonRecipe } from './images.js';

/** The project's own MBPP- and APPS-style tasks. */
export const BUILTIN_PYTHON_TASKS = packagePath('datasets', 'python', 'tasks.json');

/** Sandbox limits of the Python env: room for the interpreter and one test process at the address-space limit. */
export const PYTHON_LIMITS: ResourceLimits = { ...DEFAULT_LIMITS, memoryBytes: 2 * 1024 * 1024 * 1024 };

export interface PythonEnvOptions {
  /** Task file (InterCode JSON, JSONL, CSV, TSV). Default: the built-in tasks. `null`: tool mode. */
  data: string | null;
  session: Partial<PythonSessionOptions>;
  testTimeoutMs: number;
  entryRule: EntryRule;
  afterScore: 'keep' | 'gold-state';
  limits: Partial<ResourceLimits>;
  seed: number;
  /** The Docker engine(s) sandboxes run on. Default: DOCKER_HOST or the local socket. */
  engines: EngineSet;
  buildLog: BuildLog;
}

/**
 * `count` Python envs over one dataset (the image is built at most once).
 * @throws DatasetError for a task without usable tests; ImageError; EngineUnreachableError.
 */
export async function createPythonEnvs(options: Partial<PythonEnvOptions>, count: number): Promise<PythonEnv[]> {
  const engines = options.engines ?? EngineSet.local();
  // The task file first: bad input fails before an image is built.
  const dataFile = options.data === null ? undefined : (options.data ?? BUILTIN_PYTHON_TASKS);
  const dataset = dataFile ? await loadDataset(dataFile) : [];
  const image = await engines.ensureImage(await pythonRecipe(), options.buildLog ?? (() => undefined));
  const runtime = await engines.runtime();
  const envs: PythonEnv[] = [];
  while (envs.length < count) {
    envs.push(
      new PythonEnv({
        runtime,
        spec: { image, hostname: 'intercode', limits: { ...PYTHON_LIMITS, ...options.limits }, capabilities: DEFAULT_CAPABILITIES },
        dataset,
        ...(dataFile ? { dataFile } : {}),
        ...(options.session ? { session: options.session } : {}),
        ...(options.testTimeoutMs ? { testTimeoutMs: options.testTimeoutMs } : {}),
        ...(options.entryRule ? { entryRule: options.entryRule } : {}),
        ...(options.afterScore ? { afterScore: options.afterScore } : {}),
        ...(options.seed !== undefined ? { seed: options.seed } : {}),
      }),
    );
  }
  return envs;
}

/** One Python env. */
export async function createPythonEnv(options: Partial<PythonEnvOptions> = {}): Promise<PythonEnv> {
  return (await createPythonEnvs(options, 1))[0]!;
}

export const pythonEnvSpec: EnvSpec<PythonEnvOptions> = {
  id: 'intercode/python-v1',
  description: 'MBPP/APPS-style function tasks in a persistent Python interpreter; scored by unit tests',
  create: createPythonEnv,
};
