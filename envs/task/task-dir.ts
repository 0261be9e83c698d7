import { existsSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Task } from '../../src/datasets/index.js';
import { DatasetError } from '../../src/errors.js';
import { parseToml, TomlSyntaxError, type TomlTable, type TomlValue } from './toml.js';

/** What a task.toml says, resolved to our units, with Harbor's defaults where it is silent. */
export interface TaskDirConfig {
  /** `[task] name` (schema 1.1), else the folder's name. */
  name: string;
  verifier: { timeoutSec: number; env: Record<string, string>; user?: string };
  agent: { timeoutSec?: number };
  environment: {
    buildTimeoutSec?: number;
    cpus?: number;
    memoryBytes?: number;
    storageBytes?: number;
    /** Whether the task asks for a network, in any syntax (see {@link networkAsks}). */
    allowInternet: boolean;
    /** The settings that ask for it, as `key = value` (`environment.network_mode = "public"`); empty when none does. */
    networkAskedBy: string[];
  };
  /** Keys of `[environment]` we do not read (`gpus`, `docker_image`, `os`…): ignored, though the task may count on them. */
  ignoredKeys: string[];
}

/** One Harbor task directory, read. */
export interface TaskDir {
  /** Absolute path of the task's folder. */
  root: string;
  config: TaskDirConfig;
  /** instruction.md: what the agent is told. */
  instruction: string;
  /** environment/: the Dockerfile's build context. */
  environmentDir: string;
  /** tests/: copied to /tests when the agent has finished; test.sh is the verifier. */
  testsDir: string;
  /** solution/, when there is one (solve.sh is the gold). */
  solutionDir?: string;
}

/** Compose files a task's environment/ may hold: we refuse them (see docs/envs/task.md). */
export const COMPOSE_FILES = ['docker-compose.yaml', 'docker-compose.yml', 'compose.yaml', 'compose.yml'];

/** Harbor's defaults when task.toml is silent: a verifier gets 600 s. */
export const DEFAULT_VERIFIER_TIMEOUT_SEC = 600;

const MIB = 1024 * 1024;

/** How {@link readTaskDirs} treats a sub-folder that is not a task (holds no task.toml). */
export interface TaskDirsOptions {
  /** Refuse it (a DatasetError naming it) instead of skipping it. */
  strict?: boolean;
  /** Where a skipped sub-folder is named, with the reason. */
  log?: (line: string) => void;
}

/**
 * The task directories under `dir`: `dir` itself when it holds a task.toml, else each
 * sub-folder that does (a dataset), sorted by name. A sub-folder without task.toml is
 * named on `log` and skipped, or refused with `strict`; hidden ones (`.git`) are passed over.
 * @throws DatasetError naming the file and field at fault: `dir` missing or not a folder, no
 *   task at all, a task.toml that cannot be read, a missing instruction.md,
 *   environment/Dockerfile or tests/test.sh, or an environment given as a compose file
 *   (refused: its services would need a network).
 */
export async function readTaskDirs(dir: string, options: TaskDirsOptions = {}): Promise<TaskDir[]> {
  const info = await stat(dir).catch((error: NodeJS.ErrnoException) => error);
  if (info instanceof Error) {
    throw new DatasetError({ file: dir }, info.code === 'ENOENT' ? 'does not exist (--data names a Harbor task directory, or a folder of them)' : `cannot be read (${info.code ?? info.message})`);
  }
  if (!info.isDirectory()) throw new DatasetError({ file: dir }, 'is a file, not a folder: --data names a Harbor task directory (with task.toml), or a folder of them');
  if (existsSync(join(dir, 'task.toml'))) return [await readTaskDir(dir)];
  const folders = (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory() && !e.name.startsWith('.')).map((e) => e.name).sort();
  const names = folders.filter((name) => existsSync(join(dir, name, 'task.toml')));
  if (names.length === 0) throw new DatasetError({ file: dir }, 'holds no task.toml, nor any folder with one');
  for (const name of folders.filter((f) => !names.includes(f))) {
    const skipped = join(dir, name);
    if (options.strict) throw new DatasetError({ file: skipped }, 'holds no task.toml: not a Harbor task (without --strict it is skipped with a note)');
    options.log?.(`task: skipped ${skipped}: it holds no task.toml, so it is not a Harbor task (--strict makes this an error); the other tasks are numbered without it`);
  }
  const tasks = await Promise.all(names.map((name) => readTaskDir(join(dir, name))));
  const seen = new Map<string, string>();
  for (const task of tasks) {
    const other = seen.get(task.config.name);
    if (other) throw new DatasetError({ file: join(task.root, 'task.toml'), field: 'name' }, `"${task.config.name}" is also the name of ${other}`);
    seen.set(task.config.name, task.root);
  }
  return tasks;
}

/** One task directory. @throws DatasetError as {@link readTaskDirs}. */
export async function readTaskDir(root: string): Promise<TaskDir> {
  const tomlFile = join(root, 'task.toml');
  let table: TomlTable;
  try {
    table = parseToml(await readFile(tomlFile, 'utf8'));
  } catch (error) {
    if (error instanceof TomlSyntaxError) throw new DatasetError({ file: tomlFile, line: error.line }, error.problem);
    throw new DatasetError({ file: tomlFile }, `cannot be read: ${(error as Error).message}`);
  }
  const config = taskConfig(table, tomlFile, basename(root));
  const need = async (path: string, what: string) => {
    if (!existsSync(join(root, path))) throw new DatasetError({ file: join(root, path) }, `is missing: every task needs ${what}`);
  };
  await need('instruction.md', 'the instruction the agent is given');
  const environmentDir = join(root, 'environment');
  for (const name of COMPOSE_FILES) {
    const file = join(environmentDir, name);
    if (existsSync(file)) {
      throw new DatasetError(
        { file },
        'a compose environment is not supported: the task env runs one sandbox per episode, with no network between services (give the task an environment/Dockerfile only)',
      );
    }
  }
  await need('environment/Dockerfile', 'a Dockerfile its image is built from');
  await need('tests/test.sh', 'a verifier');
  const solutionDir = join(root, 'solution');
  return {
    root,
    config,
    instruction: await readFile(join(root, 'instruction.md'), 'utf8'),
    environmentDir,
    testsDir: join(root, 'tests'),
    ...(existsSync(join(solutionDir, 'solve.sh')) ? { solutionDir } : {}),
  };
}

/**
 * task.toml, both versions: `version = "1.0"` (no [task] table) and `schema_version = "1.1"`
 * (`[task] name`). @throws DatasetError naming the field.
 */
export function taskConfig(table: TomlTable, file: string, folderName: string): TaskDirConfig {
  const fail = (field: string, problem: string): never => {
    throw new DatasetError({ file, field }, problem);
  };
  const section = (name: string): TomlTable => {
    const value = table[name];
    if (value === undefined) return {};
    if (typeof value !== 'object' || Array.isArray(value)) return fail(name, 'must be a table');
    return value;
  };
  const number = (t: TomlTable, field: string, key: string): number | undefined => {
    const v = t[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !(v > 0)) return fail(field, `must be a positive number, got ${JSON.stringify(v)}`);
    return v;
  };
  const version = table.schema_version ?? table.version;
  if (version !== undefined && typeof version !== 'string') fail('version', 'must be a string such as "1.0"');
  const task = section('task');
  const name = task.name ?? folderName;
  if (typeof name !== 'string' || !/^[A-Za-z0-9_.\/-]+$/.test(name)) fail('task.name', `must be a name of letters, digits, "_", "-", "." or "/", got ${JSON.stringify(name)}`);
  const verifier = section('verifier');
  const env = verifier.env ?? {};
  if (typeof env !== 'object' || Array.isArray(env)) fail('verifier.env', 'must be a table of strings');
  const verifierEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries(env as TomlTable)) {
    if (typeof v !== 'string') fail(`verifier.env.${k}`, `must be a string, got ${JSON.stringify(v)}`);
    verifierEnv[k] = v as string;
  }
  const user = verifier.user;
  if (user !== undefined && (typeof user !== 'string' || !/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(user))) fail('verifier.user', `must be a user name, got ${JSON.stringify(user)}`);
  const environment = section('environment');
  const networkAskedBy = networkAsks(table, fail);
  const cpus = number(environment, 'environment.cpus', 'cpus');
  const buildTimeoutSec = number(environment, 'environment.build_timeout_sec', 'build_timeout_sec');
  const agentTimeout = number(section('agent'), 'agent.timeout_sec', 'timeout_sec');
  const memoryBytes = sizeBytes(environment, 'memory', fail);
  const storageBytes = sizeBytes(environment, 'storage', fail);
  return {
    name: name as string,
    verifier: { timeoutSec: number(verifier, 'verifier.timeout_sec', 'timeout_sec') ?? DEFAULT_VERIFIER_TIMEOUT_SEC, env: verifierEnv, ...(user ? { user: user as string } : {}) },
    agent: agentTimeout ? { timeoutSec: agentTimeout } : {},
    environment: {
      allowInternet: networkAskedBy.length > 0,
      networkAskedBy,
      ...(cpus ? { cpus } : {}),
      ...(buildTimeoutSec ? { buildTimeoutSec } : {}),
      ...(memoryBytes ? { memoryBytes } : {}),
      ...(storageBytes ? { storageBytes } : {}),
    },
    ignoredKeys: Object.keys(environment).filter((key) => !ENVIRONMENT_KEYS.has(key)).map((key) => `environment.${key}`),
  };
}

/** The `[environment]` keys we read: resources, build time, the network settings (refused when they ask for one). */
const ENVIRONMENT_KEYS = new Set(['build_timeout_sec', 'cpus', 'memory', 'memory_mb', 'storage', 'storage_mb', 'allow_internet', 'network_mode', 'allowed_hosts', 'network']);

/** Harbor's network modes that give none: `no-network` (and `none`, Docker's word). `allowlist` with no `allowed_hosts` denies all egress too. */
const NO_NETWORK_MODES = new Set(['no-network', 'none']);

/**
 * Every setting of task.toml that asks for a network, as `key = value`. Harbor's spellings:
 * `[environment] allow_internet = true` (schema 1.0); `network_mode = "public"` or
 * `"allowlist"` with `allowed_hosts` (1.1 on) in `[environment]` (the baseline), `[agent]`,
 * `[verifier]` and `[verifier.environment]` (phase overrides); and the same as a table,
 * `[environment.network] mode = …`. Any mode but `no-network`/`none` (or an allowlist with
 * no hosts) asks. @throws DatasetError (through `fail`) for a value of the wrong type.
 */
function networkAsks(table: TomlTable, fail: (field: string, problem: string) => never): string[] {
  const asks: string[] = [];
  const environment = asTable(table.environment);
  const allowInternet = environment?.allow_internet;
  if (allowInternet !== undefined && typeof allowInternet !== 'boolean') fail('environment.allow_internet', 'must be true or false');
  if (allowInternet === true) asks.push('environment.allow_internet = true');
  const phases: [string, TomlTable | undefined][] = [
    ['environment', environment],
    ['agent', asTable(table.agent)],
    ['verifier', asTable(table.verifier)],
    ['verifier.environment', asTable(asTable(table.verifier)?.environment)],
  ];
  for (const [phase, settings] of phases) {
    if (!settings) continue;
    const network = settings.network;
    if (network !== undefined && !asTable(network)) fail(`${phase}.network`, 'must be a table (mode, allowed_hosts)');
    for (const [prefix, modeKey, holder] of [[phase, 'network_mode', settings], [`${phase}.network`, 'mode', asTable(network)]] as const) {
      const mode = holder?.[modeKey];
      if (mode === undefined) continue;
      const key = `${prefix}.${modeKey}`;
      if (typeof mode !== 'string') return fail(key, `must be a network mode such as "no-network" or "public", got ${JSON.stringify(mode)}`);
      if (NO_NETWORK_MODES.has(mode)) continue;
      const hosts = holder!.allowed_hosts;
      if (mode === 'allowlist' && (hosts === undefined || (Array.isArray(hosts) && hosts.length === 0))) continue;
      asks.push(`${key} = ${JSON.stringify(mode)}${mode === 'allowlist' ? ` (allowed_hosts = ${JSON.stringify(hosts)})` : ''}`);
    }
  }
  return asks;
}

/** `value` when it is a TOML table, else undefined. */
function asTable(value: TomlValue | undefined): TomlTable | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as TomlTable) : undefined;
}

/** `memory_mb = 2048`, or `memory = "2G"` / `"512M"` / a number of MiB. */
function sizeBytes(t: TomlTable, name: 'memory' | 'storage', fail: (field: string, problem: string) => never): number | undefined {
  const mb = t[`${name}_mb`];
  if (mb !== undefined) {
    if (typeof mb !== 'number' || !(mb > 0)) return fail(`environment.${name}_mb`, `must be a positive number, got ${JSON.stringify(mb)}`);
    return Math.round(mb * MIB);
  }
  const v: TomlValue | undefined = t[name];
  if (v === undefined) return undefined;
  if (typeof v === 'number' && v > 0) return Math.round(v * MIB);
  const m = typeof v === 'string' ? /^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*$/i.exec(v) : null;
  if (!m) return fail(`environment.${name}`, `must be a size such as "2G" or "512M", got ${JSON.stringify(v)}`);
  const unit = { '': MIB, K: 1024, M: MIB, G: 1024 * MIB, T: 1024 * 1024 * MIB }[m[2]!.toUpperCase() as '' | 'K' | 'M' | 'G' | 'T'];
  return Math.round(Number(m[1]) * unit);
}

/** A task directory as a task of the dataset: its instruction is the query; its metadata says where it lives. */
export function asTask(dir: TaskDir, index: number, gold: string | string[]): Task {
  return { index, id: dir.config.name, query: dir.instruction, gold, metadata: { task_id: dir.config.name, task_dir: dir.root } };
}
