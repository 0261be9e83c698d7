import type { Task } from '../../src/datasets/index.js';
import { packagePath } from '../../src/package-path.js';
import type { SandboxEnv } from '../../src/env/sandbox-env.js';
import { exportedTaskName, verifierFiles, type HarborTaskFiles } from '../task/harbor-writer.js';
import { goldEntry, toPythonTask, type EntryRule } from './python-task.js';

/** Where the agent of an exported Python task writes its solution. */
export const SOLUTION_FILE = '/app/solution.py';

export interface PythonHarborOptions {
  entryRule: EntryRule;
  testTimeoutSec: number;
  memoryBytes: number;
  dataFile: string;
}

/**
 * A Python task as a Harbor task directory: the env's image, WORKDIR /app; the agent
 * writes its code to /app/solution.py (a Harbor verifier never sees the interpreter's
 * history nor a `submit <name>`: the instruction names the function the tests call); the
 * verifier runs each test on the gold and on the solution and scores the share of equal
 * outcomes, as InterCode did; an APPS-style task's verifier runs the program on each
 * stdin/stdout case. solve.sh copies the gold program there.
 */
export async function pythonHarborTask(env: SandboxEnv, task: Task, options: PythonHarborOptions): Promise<HarborTaskFiles> {
  const python = toPythonTask(task, options.dataFile);
  const common = { answer: SOLUTION_FILE, testTimeoutSec: options.testTimeoutSec, memoryBytes: options.memoryBytes };
  const verify = [packagePath('envs', 'python', 'checked_values.py'), packagePath('envs', 'python', 'harbor_verify.py')];
  const asked =
    python.kind === 'mbpp'
      ? `Write your solution, Python code that defines the function \`${goldEntry(python, options.entryRule)!}\` (the tests call it), to ${SOLUTION_FILE}.`
      : `Write your solution, a Python program that reads its input from stdin and prints its answer, to ${SOLUTION_FILE}.`;
  return {
    name: exportedTaskName('python', task.id),
    instruction: `${task.query}\n\n${asked}`,
    dockerfile: `FROM ${env.image}\nWORKDIR /app\n`,
    tests: await verifierFiles(
      verify,
      python.kind === 'mbpp'
        ? { ...common, kind: 'mbpp', gold: python.gold, setup: python.setup, tests: python.tests }
        : { ...common, kind: 'apps', cases: python.cases },
    ),
    solution: { 'solve.sh': `#!/bin/bash\ncp "$(dirname "$0")/solution.py" ${SOLUTION_FILE}\n`, 'solution.py': `${python.gold}\n` },
    verifierTimeoutSec: 60 + (python.kind === 'mbpp' ? python.tests.length * 2 : python.cases.length) * (options.testTimeoutSec + 1),
    agentTimeoutSec: 1800,
    metadata: { source: 'intercode-ts export', env: 'python', task_id: task.id },
  };
}
