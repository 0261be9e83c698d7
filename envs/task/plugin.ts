import { join } from 'node:path';
import { SUBMIT_AS_IS } from '../../src/agents/index.js';
import { keepWarmMs, parseSandboxMode } from '../../src/scheduler/index.js';
import { positiveInteger, timeoutMs } from '../../src/env/flag-values.js';
import { ConfigError, DatasetError } from '../../src/errors.js';
import type { CommonEnvFlags, EnvPlugin } from '../plugin.js';
import { createTaskEnvs, taskEnvSpec } from './index.js';
import { TASK_PROMPT } from './prompt.js';

interface TaskFlags extends CommonEnvFlags {
  internetTasksOffline?: boolean;
  strict?: boolean;
  warmImages?: string;
  sandboxes?: string;
  keepWarm?: string;
  tool?: boolean;
}

/** The task-directory env. */
export const taskPlugin: EnvPlugin = {
  name: 'task',
  spec: taskEnvSpec,
  flags: [
    { flags: '--internet-tasks-offline', description: 'task: run tasks whose task.toml asks for a network (allow_internet = true, a network_mode other than "no-network") anyway, without one (sandboxes never get one; what needs it fails)' },
    { flags: '--strict', description: 'task: a sub-folder of --data that is not a task (holds no task.toml) is an error; without it, it is skipped and named on stderr' },
    { flags: '--warm-images <n>', description: 'task: images whose sandboxes are kept warm at once (least recently used closed past it; default 8)' },
  ],
  async createEnvs(flags: TaskFlags, count: number, { log, engines }) {
    if (!flags.data || flags.tool) throw new ConfigError('--data', 'is needed: a Harbor task directory, or a folder of them');
    const timeout = timeoutMs(flags.timeout);
    const sandboxes = parseSandboxMode(flags.sandboxes ?? 'pooled');
    return createTaskEnvs(
      {
        data: flags.data,
        internetTasksOffline: flags.internetTasksOffline === true,
        strict: flags.strict === true,
        sandboxes,
        keepWarmMs: sandboxes === 'pooled' ? keepWarmMs(flags.keepWarm) : 0,
        ...(flags.warmImages ? { maxWarmImages: positiveInteger('--warm-images', flags.warmImages) } : {}),
        ...(timeout ? { shell: { timeoutMs: timeout } } : {}),
        buildLog: log,
        engines,
      },
      count,
    );
  },
  goldActions(task) {
    if (Array.isArray(task.gold) && task.gold.length === 0) {
      throw new DatasetError({ file: join(String(task.metadata.task_dir), 'solution', 'solve.sh') }, 'is missing: the task has no gold solution');
    }
    return [...(Array.isArray(task.gold) ? task.gold : [task.gold]), 'submit'];
  },
  agent: { prompt: TASK_PROMPT, stepScoring: SUBMIT_AS_IS },
  training: { exploration: { fixed: [], fromObservation: () => [] } },
  images: { list: () => [], perTask: "one per Harbor task directory, built from its environment/ on the task's first run (its build_timeout_sec applies)" },
};
