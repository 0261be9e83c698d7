import { loadDataset } from '../../src/datasets/index.js';
import type { EnvSpec } from '../../src/env/registry.js';
import { ConfigError } from '../../src/errors.js';
import type { BuildLog } from '../../src/images/image-builder.js';
import { packagePath } from '../../src/package-path.js';
import { EngineSet } from '../../src/sandbox/backends/engine-set.js';
import type { ShellSessionOptions } from '../../src/sandbox/shell/shell-session.js';
import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS, type ResourceLimits } from '../../src/sandbox/types.js';
import { assetsBeside, TaskAssets } from './assets.js';
import { CtfEnv, type WrongFlagMode } from './ctf-env.js';
import { ctfRecipe } from './images.js';

export { CtfEnv, CORRECT_FLAG, INCORRECT_FLAG, type WrongFlagMode } from './ctf-env.js';
export { TaskAssets, CTF_ROOT, HIDDEN_FOLDER, assetsBeside } from './assets.js';
export { flagScore, submittedFlag } from './reward.js';
export { ctfRecipe } from './images.js';

/** The project's own CTF tasks and their files (datasets/ctf). */
export const BUILTIN_CTF_TASKS = packagePath('datasets', 'ctf', 'ic_ctf.json');
export const BUILTIN_CTF_ASSETS = packagePath('datasets', 'ctf', 'task_assets');

/** CTF tools need more room than NL2Bash commands: a JVM, gdb, binwalk's extractors. */
export const CTF_LIMITS: ResourceLimits = { ...DEFAULT_LIMITS, memoryBytes: 1024 * 1024 * 1024 };
/** Brute-force and decoding scripts take longer than NL2Bash commands. */
export const CTF_TIMEOUT_MS = 30_000;

export interface CtfEnvOptions {
  /** Task file (InterCode JSON, JSONL, CSV, TSV). Default: the built-in tasks. `null`: tool mode. */
  data: string | null;
  /** Task files in InterCode's task_assets layout. Default: `task_assets` beside the data file, else the built-in ones. */
  assets: string;
  wrongFlag: WrongFlagMode;
  shell: Partial<ShellSessionOptions>;
  limits: Partial<ResourceLimits>;
  seed: number;
  /** The Docker engine(s) sandboxes run on. Default: DOCKER_HOST or the local socket. */
  engines: EngineSet;
  buildLog: BuildLog;
}

/**
 * `count` CTF envs sharing one image and one asset store. Tasks without files (a missing
 * folder, or only `solution/`) are reported through `buildLog` and start in an empty folder.
 * @throws ConfigError when there is no asset folder for a task file; DatasetError for bad data or assets.
 */
export async function createCtfEnvs(options: Partial<CtfEnvOptions>, count: number): Promise<CtfEnv[]> {
  const log = options.buildLog ?? (() => undefined);
  const engines = options.engines ?? EngineSet.local();
  const dataFile = options.data === null ? undefined : (options.data ?? BUILTIN_CTF_TASKS);
  const dataset = dataFile ? await loadDataset(dataFile) : [];
  const assetRoot = options.assets ?? (dataFile ? assetsBeside(dataFile) : BUILTIN_CTF_ASSETS);
  if (!assetRoot) throw new ConfigError('--assets', `is needed: no task_assets folder beside ${dataFile}`);
  const assets = new TaskAssets(assetRoot);
  const empty = dataFile ? await assets.check(dataset, dataFile) : [];
  if (empty.length > 0) log(`ctf: no files in ${assetRoot} for task(s) ${empty.join(', ')}; they start in an empty folder`);
  // The data and assets are checked first: bad input fails before a build of minutes.
  const image = await engines.ensureImage(await ctfRecipe(), log);
  const runtime = await engines.runtime();
  const envs: CtfEnv[] = [];
  while (envs.length < count) {
    envs.push(
      new CtfEnv({
        runtime,
        spec: { image, hostname: 'intercode', limits: { ...CTF_LIMITS, ...options.limits }, capabilities: DEFAULT_CAPABILITIES },
        dataset,
        assets,
        wrongFlag: options.wrongFlag ?? 'continue',
        shell: { timeoutMs: CTF_TIMEOUT_MS, ...options.shell },
        ...(options.seed !== undefined ? { seed: options.seed } : {}),
      }),
    );
  }
  return envs;
}

export async function createCtfEnv(options: Partial<CtfEnvOptions> = {}): Promise<CtfEnv> {
  return (await createCtfEnvs(options, 1))[0]!;
}

export const ctfEnvSpec: EnvSpec<CtfEnvOptions> = {
  id: 'intercode/ctf-v1',
  description: 'Capture-the-flag tasks with a forensics, crypto and reversing tool set; reward 1 for the gold flag',
  create: createCtfEnv,
};
