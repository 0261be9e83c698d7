import { readFile } from 'node:fs/promises';
import { goldText, type Task } from '../../src/datasets/index.js';
import { ConfigError } from '../../src/errors.js';
import { packagePath } from '../../src/package-path.js';
import { ANSWER_DIR, exportedTaskName, verifierFiles, type HarborTaskFiles } from '../task/harbor-writer.js';
import { SQL_DATA_REPOSITORY } from './images.js';
import { hasTopLevelOrderBy } from './reward.js';
import type { SqlEnv } from './sql-env.js';
import { goldRowsOf } from './outcome-text.js';

/** Where the agent of an exported SQL task writes its final query. */
export const ANSWER_FILE = `${ANSWER_DIR}/answer.sql`;

const harborFile = (name: string) => readFile(packagePath('envs', 'sql', 'harbor', name), 'utf8');

/**
 * An SQL task as a Harbor task directory, one container: FROM the env's data image (MariaDB
 * with the dumps loaded, by its content tag) plus python3, PyMySQL and `sql`, a client that
 * starts the server when it is not running (neither our task env nor Harbor runs the image's
 * command). The agent writes its final query to /logs/agent/answer.sql (a Harbor verifier
 * never sees a last result nor a `submit`). The gold's rows are read now, on the original
 * data in a new session of the env's server, and kept in tests/expected.json; the verifier
 * runs the agent's query as the env runs a statement and scores InterCode's reward.
 * solve.sh writes the gold query there.
 * @throws ConfigError for an env not on the read-only server (--sqlite, --embedded, --writable) or a task without a database.
 */
export async function sqlHarborTask(env: SqlEnv, task: Task): Promise<HarborTaskFiles> {
  const image = env.backend.identity;
  if (!env.backend.dataFixed || !image.startsWith(`${SQL_DATA_REPOSITORY}:`)) {
    throw new ConfigError('--format harbor', `exports SQL tasks on the read-only MariaDB server only (a task's image is FROM its data image), not on ${image} (leave out --sqlite, --embedded and --writable)`);
  }
  const database = env.databaseFor(task);
  if (database === undefined) throw new ConfigError('--database', `is needed: task ${task.id} names no database ("db")`);
  const gold = goldText(task);
  const outcome = await env.originalGoldOutcome(task);
  const goldRows = goldRowsOf(outcome);
  const order = env.order;
  const ordered = order === 'intercode' || (order === 'gold-order-by' && hasTopLevelOrderBy(gold));
  const { timeoutMs, maxRows, maxBytes } = env.limits;
  const [dockerfile, startServer, client] = await Promise.all([harborFile('Dockerfile'), harborFile('start-sql-server.sh'), harborFile('sql.sh')]);
  return {
    name: exportedTaskName('sql', task.id),
    instruction:
      `${task.query}\n\n` +
      `The database \`${database}\` is on a MariaDB server in this container (MySQL's dialect). Run statements with ` +
      `\`sql ${database} -e 'SHOW TABLES'\` (\`sql ${database}\` alone opens the interactive client); \`sql\` starts the server when it is not running. ` +
      `Write your answer, one SQL query whose result answers the question, to ${ANSWER_FILE} ` +
      `(e.g. \`mkdir -p ${ANSWER_DIR}; echo "SELECT …" > ${ANSWER_FILE}\`). It is run on its own on \`${database}\`, read-only, ` +
      `and its rows are compared with those of a reference query: the same rows${ordered ? ', in the same order,' : ''} score 1.`,
    dockerfile: `FROM ${image}\n${dockerfile}`,
    environment: { 'start-sql-server.sh': startServer, 'sql.sh': client },
    tests: await verifierFiles(packagePath('envs', 'sql', 'harbor_verify.py'), { answer: ANSWER_FILE, database, gold: goldRows, ordered, timeoutMs, maxRows, maxBytes }),
    solution: {
      'solve.sh': `#!/bin/bash\nmkdir -p ${ANSWER_DIR}\ncp "$(dirname "$0")/gold.sql" ${ANSWER_FILE}\n`,
      'gold.sql': gold,
    },
    verifierTimeoutSec: 120 + Math.ceil(timeoutMs / 1000),
    agentTimeoutSec: 1800,
    metadata: { source: 'intercode-ts export', env: 'sql', task_id: task.id, database },
  };
}
