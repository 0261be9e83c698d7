import { join } from 'node:path';
import type { EnvSpec } from '../../src/env/registry.js';
import { ConfigError } from '../../src/errors.js';
import type { BuildLog } from '../../src/images/image-builder.js';
import { directoryEntries, packEntries } from '../../src/images/tar.js';
import { EngineSet } from '../../src/sandbox/backends/engine-set.js';
import type { ShellSessionOptions } from '../../src/sandbox/shell/shell-session.js';
import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS, type SandboxSpec } from '../../src/sandbox/types.js';
import { environmentImage } from './environment-image.js';
import { ImageWorkspaces, type TaskSandboxMode } from './image-workspaces.js';
import { asTask, readTaskDirs, type TaskDir } from './task-dir.js';
import { goldAction, TaskDirEnv, type PreparedTask, type TaskDirShared } from './task-env.js';
import { TestsArchives } from './verifier.js';

export { TaskDirEnv, goldAction, type PreparedTask } from './task-env.js';
export { readTaskDirs, readTaskDir, taskConfig, COMPOSE_FILES, type TaskDir, type TaskDirConfig, type TaskDirsOptions } from './task-dir.js';
export { environmentImage, dockerfileWorkdir } from './environment-image.js';
export { runVerifier, parseReward, TESTS_DIR, VERIFIER_LOGS } from './verifier.js';
export { ImageWorkspaces, type TaskSandboxMode } from './image-workspaces.js';
export { parseToml } from './toml.js';

/** Harbor's default memory (memory_mb = 2048) where task.toml says none. */
export const TASK_MEMORY_BYTES = 2 * 1024 ** 3;
/** A command of a task's agent (a build, a test run) may take long: 180 s unless --timeout says. */
export const TASK_TIMEOUT_MS = 180_000;
/** Image pools kept at once (see ImageWorkspaces): 8 images' sandboxes warm, the least recently used closed past it. */
export const DEFAULT_WARM_IMAGES = 8;
/** Images built at once: each build is CPU- and disk-bound. */
const CONCURRENT_BUILDS = 4;

export interface TaskEnvOptions {
  /** A task directory (with task.toml), or a folder of them. */
  data: string;
  /** Run tasks whose task.toml asks for a network (`allow_internet = true`, a `network_mode` other than `no-network`…) anyway, without one (their verifier or solution may fail). */
  internetTasksOffline: boolean;
  /** A sub-folder of `data` that is not a task (no task.toml) is an error instead of skipped with a note on `buildLog`. */
  strict: boolean;
  sandboxes: TaskSandboxMode;
  maxWarmImages: number;
  keepWarmMs: number;
  shell: Partial<ShellSessionOptions>;
  seed: number;
  engines: EngineSet;
  buildLog: BuildLog;
}

/**
 * `count` envs over the task directories at `options.data`, sharing their images (built
 * concurrently, each once, cached by the hash of its build context) and their warm pools.
 * @throws DatasetError for a task directory we cannot read or refuse (compose, USER);
 *   ConfigError for a task that asks for internet without `internetTasksOffline`;
 *   ImageError when a task's base image is missing or its build fails.
 */
export async function createTaskEnvs(options: Partial<TaskEnvOptions> & { data: string }, count: number): Promise<TaskDirEnv[]> {
  const log = options.buildLog ?? (() => undefined);
  const engines = options.engines ?? EngineSet.local();
  const dirs = await readTaskDirs(options.data, { strict: options.strict === true, log });
  for (const dir of dirs) {
    for (const key of dir.config.ignoredKeys) log(`task: ${join(dir.root, 'task.toml')}: ${key} is not read here (ignored): the task may count on it`);
  }
  const online = dirs.filter((d) => d.config.environment.allowInternet);
  if (online.length > 0 && !options.internetTasksOffline) {
    throw new ConfigError(
      '--data',
      `has task(s) that ask for a network: ${online.map((d) => `${join(d.root, 'task.toml')} (${d.config.environment.networkAskedBy.join(', ')})`).join('; ')}. ` +
        'Sandboxes never get a network here; pass --internet-tasks-offline to run them without it (what needs the network will fail, and score as such).',
    );
  }
  const images = await mapLimited(dirs, CONCURRENT_BUILDS, async (dir) => {
    const image = await environmentImage(dir, (ref) => engines.imageId(ref));
    return { ...image, tag: await engines.ensureImage(image.recipe, log) };
  });
  const runtime = await engines.runtime();
  const prepared = new Map<string, PreparedTask>();
  const workdirs = new Map<string, string>();
  const tasks = await Promise.all(
    dirs.map(async (dir, index) => {
      const { tag, workdir } = images[index]!;
      prepared.set(dir.config.name, { dir, spec: taskSpec(dir, tag), workdir });
      workdirs.set(tag, workdir);
      return asTask(dir, index, dir.solutionDir ? goldAction(await packEntries(await directoryEntries(dir.solutionDir, '.'))) : []);
    }),
  );
  const distinct = new Set(images.map((i) => i.tag)).size;
  const maxWarmImages = options.maxWarmImages ?? DEFAULT_WARM_IMAGES;
  const mode = options.sandboxes ?? 'pooled';
  log(
    `task: ${dirs.length} task(s) on ${distinct} image(s); ` +
      (mode === 'pooled' ? `warm pools for at most ${maxWarmImages} image(s) at once, each 1 sandbox made ahead, up to ${count + 1} on demand, and a template` : 'a new sandbox per episode'),
  );
  const envs: TaskDirEnv[] = [];
  const shared: TaskDirShared = {
    tasks: prepared,
    workdirs,
    tests: new TestsArchives(),
    open: count,
    workspaces: new ImageWorkspaces({ mode, maxWarmImages, borrowers: count, keepWarmMs: options.keepWarmMs ?? 0, factoryFor: (spec) => envs[0]!.workspaceFactory(spec) }),
  };
  while (envs.length < count) {
    envs.push(
      new TaskDirEnv({
        runtime,
        spec: prepared.get(tasks[0]!.id)!.spec,
        dataset: tasks,
        shared,
        shell: { timeoutMs: TASK_TIMEOUT_MS, ...options.shell },
        ...(options.seed !== undefined ? { seed: options.seed } : {}),
      }),
    );
  }
  return envs;
}

/** A task's sandbox: its image, and the limits its task.toml asks for (Harbor's defaults where silent). */
function taskSpec(dir: TaskDir, image: string): SandboxSpec {
  const { cpus, memoryBytes, storageBytes } = dir.config.environment;
  return {
    image,
    hostname: 'intercode',
    limits: { ...DEFAULT_LIMITS, pids: 1024, memoryBytes: memoryBytes ?? TASK_MEMORY_BYTES, ...(cpus ? { cpus } : {}), ...(storageBytes ? { diskBytes: storageBytes } : {}) },
    capabilities: DEFAULT_CAPABILITIES,
  };
}

/** `work` over `items`, at most `limit` at once, results in order. */
async function mapLimited<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

export async function createTaskEnv(options: Partial<TaskEnvOptions> & { data: string }): Promise<TaskDirEnv> {
  return (await createTaskEnvs(options, 1))[0]!;
}

export const taskEnvSpec: EnvSpec<TaskEnvOptions> = {
  id: 'intercode/task-v1',
  description: 'Harbor task directories (task.toml, instruction.md, environment/, tests/, solution/): each task its own image; reward from its verifier',
  create: (options) => {
    if (!options?.data) throw new ConfigError('data', 'is needed: a Harbor task directory, or a folder of them');
    return createTaskEnv({ ...options, data: options.data });
  },
};
