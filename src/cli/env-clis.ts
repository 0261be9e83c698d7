import { bashCli } from '../../envs/bash/cli.js';
import { ctfCli } from '../../envs/ctf/cli.js';
import { pythonCli } from '../../envs/python/cli.js';
import { sqlCli } from '../../envs/sql/cli.js';
import { taskCli } from '../../envs/task/cli.js';
import type { EnvCli } from './env-cli.js';

/** Every environment the CLI offers, in the order `--help` lists them. */
export const ENV_CLIS: readonly EnvCli[] = [bashCli, sqlCli, pythonCli, ctfCli, taskCli];
