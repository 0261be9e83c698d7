import type { Task } from '../../src/datasets/index.js';
import { goldText } from '../../src/datasets/index.js';
import { packagePath } from '../../src/package-path.js';
import { ANSWER_DIR, exportedTaskName, verifierFiles, type HarborTaskFiles } from '../task/harbor-writer.js';
import type { BashEnv } from './bash-env.js';
import type { HashMode } from './file-probe.js';

/**
 * A bash task as a Harbor task directory: FROM the env's testbed image (the testbed is in
 * it, the root a git repository, as the env's own), the shell at /. InterCode compares the
 * agent's last output with the gold's: a Harbor verifier sees only the final container, so
 * the instruction asks for that output in /logs/agent/answer.txt. The gold's outcome (what
 * it changed, the sums of what it added, its output) is read now, in a new sandbox of the
 * image, and kept in tests/expected.json; solve.sh runs the gold with its output in the
 * answer file.
 */
export async function bashHarborTask(env: BashEnv, task: Task, hashMode: HashMode, prefix: string): Promise<HarborTaskFiles> {
  const answer = `${ANSWER_DIR}/answer.txt`;
  const { outcome } = await env.goldOutcome(task);
  return {
    name: exportedTaskName(prefix, task.id),
    instruction:
      `${task.query}\n\nWork in the shell (its files are compared with those a reference solution leaves). ` +
      `If the task asks for information, write the output of the command that gives it to ${answer} (e.g. \`mkdir -p ${ANSWER_DIR}; your-command > ${answer} 2>&1\`); ` +
      'it is compared with the reference command\'s output.',
    dockerfile: `FROM ${env.image}\nWORKDIR /\n`,
    tests: await verifierFiles(packagePath('envs', 'bash', 'harbor_verify.py'), {
      answer,
      hashMode,
      observation: outcome.observation,
      changes: outcome.changes,
      hashes: Object.fromEntries(outcome.hashes),
    }),
    solution: {
      'solve.sh': `#!/bin/bash\nmkdir -p ${ANSWER_DIR}\ncd /\nbash "$(dirname "$0")/gold.sh" > ${answer} 2>&1\nexit 0\n`,
      'gold.sh': `${goldText(task)}\n`,
    },
    verifierTimeoutSec: 120,
    agentTimeoutSec: 1800,
    metadata: { source: 'intercode-ts export', env: 'bash', task_id: task.id },
  };
}
