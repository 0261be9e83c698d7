import { SUBMIT_AS_IS } from '../../src/agents/index.js';
import { timeoutMs } from '../../src/env/flag-values.js';
import { ConfigError } from '../../src/errors.js';
import { firstDistinct, MAX_DERIVED, PATH } from '../exploration.js';
import type { CommonEnvFlags, CreateEnvsOptions, EnvPlugin } from '../plugin.js';
import { BUILTIN_CTF_TASKS, createCtfEnvs, ctfEnvSpec } from './index.js';
import { CTF_PROMPT } from './prompt.js';
import type { CtfEnv } from './ctf-env.js';
import { ctfHarborTask } from './harbor-export.js';
import { ctfRecipe } from './images.js';

interface CtfFlags extends CommonEnvFlags {
  assets?: string;
  wrongFlag?: string;
  tool?: boolean;
}

/** The CTF environment. */
export const ctfPlugin: EnvPlugin = {
  name: 'ctf',
  builtInTasks: BUILTIN_CTF_TASKS,
  spec: ctfEnvSpec,
  flags: [
    { flags: '--assets <dir>', description: "ctf: task files in InterCode's task_assets layout (<dir>/<task_id>/…; default: task_assets beside --data, else built-in)" },
    { flags: '--wrong-flag <mode>', description: 'ctf: continue (say the flag is incorrect and go on, as InterCode\'s evaluation did; default) or end (end the episode with reward 0)' },
  ],
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
        buildLog: log,
        engines,
      },
      count,
    );
  },
  goldActions: (task) => [`submit ${String(task.gold)}`],
  agent: { prompt: CTF_PROMPT, stepScoring: SUBMIT_AS_IS },
  training: {
    exploration: {
      fixed: ['ls -la', 'find . -maxdepth 2 -type f', 'pwd'],
      fromObservation: (obs) => firstDistinct([...obs.matchAll(PATH)].map((m) => m[0]), MAX_DERIVED).map((p) => `cat ${p}`),
    },
  },
  images: { list: () => [{ name: 'ctf', usedBy: 'every ctf command', byDefault: true, recipe: ctfRecipe }] },
  harbor: { task: (env, task) => ctfHarborTask(env as CtfEnv, task) },
};
