import type { Command } from 'commander';
import type { CommonEnvFlags, CreateEnvsOptions, EnvCli } from '../../src/cli/env-cli.js';
import { timeoutMs } from '../../src/cli/env-cli.js';
import { ConfigError } from '../../src/errors.js';
import { createCtfEnvs } from './index.js';
import type { CtfEnv } from './ctf-env.js';
import { ctfHarborTask } from './harbor-export.js';

interface CtfFlags extends CommonEnvFlags {
  assets?: string;
  wrongFlag?: string;
  tool?: boolean;
}

/** The CTF environment's CLI flags and env construction. */
export const ctfCli: EnvCli = {
  name: 'ctf',
  flagNames: ['assets', 'wrongFlag'],
  addFlags(command: Command): void {
    command
      .option('--assets <dir>', "ctf: task files in InterCode's task_assets layout (<dir>/<task_id>/…; default: task_assets beside --data, else built-in)")
      .option('--wrong-flag <mode>', 'ctf: continue (say the flag is incorrect and go on, as InterCode\'s evaluation did; default) or end (end the episode with reward 0)');
  },
  async createEnvs(flags: CtfFlags, count: number, { log, engines }: CreateEnvsOptions) {
    const wrongFlag = flags.wrongFlag ?? 'continue';
    if (wrongFlag !== 'continue' && wrongFlag !== 'end') throw new ConfigError('--wrong-flag', `must be continue or end, got "${wrongFlag}"`);
    const timeout = timeoutMs(flags.timeout);
    return createCtfEnvs(
      {
        ...(flags.tool ? { data: null } : flags.data ? { data: flags.data } : {}),
        ...(flags.assets ? { assets: flags.assets } : {}),
        wrongFlag,
        ...(timeout ? { shell: { timeoutMs: timeout } } : {}),
        ...(flags.trajectories ? { trajectoryDir: flags.trajectories } : {}),
        buildLog: log,
        engines,
      },
      count,
    );
  },
  goldActions: (task) => [`submit ${String(task.gold)}`],
  harborTask: (env, task) => ctfHarborTask(env as CtfEnv, task),
};
