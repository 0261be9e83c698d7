/**
 * Runs reference solvers (a task's `solution/` scripts) inside a CTF episode. The solver
 * files reach the sandbox only here, written in by the test through the episode's shell.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import type { CtfEnv } from '../../envs/ctf/index.js';
import { CTF_ROOT } from '../../envs/ctf/index.js';
import type { Task } from '../../src/datasets/index.js';
import { packEntries } from '../../src/images/tar.js';

/** How each kind of solver runs, from the folder it is started in. */
const RUNNERS: Readonly<Record<string, (file: string) => string>> = {
  '.py': (file) => `python3 ${file}`,
  '.sh': (file) => `bash ${file}`,
  '.java': (file) => `java ${file}`,
};

/** The runnable solver scripts in `<assets>/<task_id>/solution/`, by file name. */
export function solverFiles(assets: string, taskId: string): string[] {
  const dir = join(assets, taskId, 'solution');
  try {
    return readdirSync(dir).filter((name) => extname(name) in RUNNERS).sort();
  } catch {
    return [];
  }
}

export interface SolverRun {
  file: string;
  /** The folder the run that found the flag started in, or undefined when no run found it. */
  foundFrom: 'task' | 'solution' | undefined;
  output: string;
}

/**
 * Copies the task's whole solution/ folder to /ctf/<task_id>/solution in the episode (as
 * InterCode's own checkout had it, so relative paths in solvers resolve), then runs each
 * solver from the task's folder and, if that does not print the flag, from solution/.
 */
export async function runSolvers(env: CtfEnv, task: Task, assets: string, files: readonly string[]): Promise<SolverRun[]> {
  const solutionDir = join(assets, task.id, 'solution');
  const entries = readdirSync(solutionDir).map((name) => ({ name: `solution/${name}`, type: 'file' as const, mode: 0o644, content: readFileSync(join(solutionDir, name)) }));
  const tar = await packEntries([{ name: 'solution', type: 'directory', mode: 0o755 }, ...entries]);
  const taskDir = `${CTF_ROOT}/${task.id}`;
  await env.step(`echo ${tar.toString('base64')} | base64 -d | tar -x -C ${taskDir}`);
  const gold = String(task.gold).toLowerCase();
  const runs: SolverRun[] = [];
  for (const file of files) {
    const run = RUNNERS[extname(file)]!;
    let output = '';
    let foundFrom: SolverRun['foundFrom'];
    for (const [from, command] of [
      ['task', `cd ${taskDir} && ${run(`solution/${file}`)}`],
      ['solution', `cd ${taskDir}/solution && ${run(file)}`],
    ] as const) {
      output = (await env.step(command)).observation;
      if (output.toLowerCase().includes(gold)) {
        foundFrom = from;
        break;
      }
    }
    runs.push({ file, foundFrom, output });
  }
  return runs;
}
