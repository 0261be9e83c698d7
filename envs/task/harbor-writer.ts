import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { packagePath } from '../../src/package-path.js';

/** Where an exported task asks the agent to leave its answer (outside every tree a verifier compares). */
export const ANSWER_DIR = '/logs/agent';

/** One task in Harbor's format, ready to write: what {@link writeHarborTask} lays out as a task directory. */
export interface HarborTaskFiles {
  /** The folder's name, and `[task] name`: letters, digits, `_`, `-`, `.`. */
  name: string;
  /** instruction.md. */
  instruction: string;
  /** environment/Dockerfile. */
  dockerfile: string;
  /** Other files of environment/ (the build context), by relative path. */
  environment?: Record<string, string | Buffer>;
  /** tests/: test.sh (the verifier) and what it reads, by relative path. */
  tests: Record<string, string | Buffer>;
  /** solution/: solve.sh (the oracle) and what it reads, by relative path. */
  solution: Record<string, string | Buffer>;
  verifierTimeoutSec: number;
  agentTimeoutSec: number;
  /** [metadata]: where the task came from. */
  metadata: Record<string, string | number>;
}

/** The executable files of a task directory (Harbor runs test.sh and solve.sh with bash; the mode is for people). */
const EXECUTABLE = /\.(sh|py)$/;

/** A TOML basic string (JSON's escapes are TOML's for the characters JSON escapes). */
const tomlString = (value: string) => JSON.stringify(value);

/** task.toml of `task` (schema 1.1: `[task] name`). */
export function taskToml(task: HarborTaskFiles): string {
  const metadata = Object.entries(task.metadata).map(([k, v]) => `${k} = ${typeof v === 'number' ? v : tomlString(v)}`);
  return [
    'schema_version = "1.1"',
    '',
    '[task]',
    `name = ${tomlString(task.name)}`,
    '',
    '[metadata]',
    ...metadata,
    '',
    '[verifier]',
    `timeout_sec = ${task.verifierTimeoutSec}`,
    '',
    '[agent]',
    `timeout_sec = ${task.agentTimeoutSec}`,
    '',
    '[environment]',
    'allow_internet = false',
    '',
  ].join('\n');
}

/**
 * Writes `task` as a Harbor task directory `<out>/<name>/` (replaced if it exists):
 * task.toml, instruction.md, environment/, tests/, solution/.
 * @returns the task directory's path.
 */
export async function writeHarborTask(out: string, task: HarborTaskFiles): Promise<string> {
  const root = join(out, task.name);
  await rm(root, { recursive: true, force: true });
  const files: Record<string, string | Buffer> = {
    'task.toml': taskToml(task),
    'instruction.md': task.instruction.endsWith('\n') ? task.instruction : `${task.instruction}\n`,
    'environment/Dockerfile': task.dockerfile,
  };
  for (const [path, content] of Object.entries(task.environment ?? {})) files[`environment/${path}`] = content;
  for (const [path, content] of Object.entries(task.tests)) files[`tests/${path}`] = content;
  for (const [path, content] of Object.entries(task.solution)) files[`solution/${path}`] = content;
  for (const [path, content] of Object.entries(files)) {
    const file = join(root, path);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, content);
    if (EXECUTABLE.test(path)) await chmod(file, 0o755);
  }
  return root;
}

/** A task folder's name from an env and a task id: characters outside `[A-Za-z0-9_.-]` become `_`. */
export function exportedTaskName(prefix: string, id: string): string {
  return `${prefix}-${id.replace(/[^A-Za-z0-9_.-]/g, '_')}`;
}

/** test.sh of an exported task: verify.py computes the reward and writes /logs/verifier/reward.json. */
const TEST_SH = '#!/bin/bash\n# Written by `intercode export --format harbor`: verify.py writes /logs/verifier/reward.json.\nexec python3 /tests/verify.py\n';

/**
 * tests/ of an exported task: test.sh, verify.py (envs/task/harbor_common.py, then the env's
 * `verifyProgram`, one file or several in order) and expected.json (what the program compares
 * with: `expected`).
 */
export async function verifierFiles(verifyProgram: string | readonly string[], expected: unknown): Promise<Record<string, string>> {
  const files = [packagePath('envs', 'task', 'harbor_common.py'), ...(typeof verifyProgram === 'string' ? [verifyProgram] : verifyProgram)];
  const texts = await Promise.all(files.map((file) => readFile(file, 'utf8')));
  return { 'test.sh': TEST_SH, 'verify.py': texts.join('\n\n'), 'expected.json': `${JSON.stringify(expected, null, 1)}\n` };
}
