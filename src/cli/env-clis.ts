import { bashCli } from '../../envs/bash/cli.js';
import { pythonCli } from '../../envs/python/cli.js';
import type { EnvCli } from './env-cli.js';

/** Every environment the CLI offers, in the order `--help` lists them. */
export const ENV_CLIS: readonly EnvCli[] = [bashCli, pythonCli];
