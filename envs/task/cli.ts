import { join } from 'node:path';
import type { Command } from 'commander';
import type { CommonEnvFlags, EnvCli } from '../../src/cli/env-cli.js';
import { positiveInteger, timeoutMs } from '../../src/cli/env-cli.js';
import { keepWarmMs, parseSandboxMode } from '../../src/engine/index.js';
import { ConfigError, DatasetError } from '../../src/errors.js';
import { createTaskEnvs } from './index.js';

interface TaskFlags extends CommonEnvFlags {
  internetTasksOffline?: boolean;
  warmImages?: string;
  sandboxes?: string;
  keepWarm?: string;
  tool?: boolean;
}

/** The task-directory env's CLI flags and env construction. */
export const taskCli: EnvCli = {
  name: 'task',
  flagNames: ['internetTasksOffline', 'warmImages'],
  addFlags(command: Command): void {
    command
      .option('--internet-tasks-offline', 'task: run tasks whose task.toml says allow_internet = true anyway, without network (sandboxes never get one; what needs it fails)')
      .option('--warm-images <n>', 'task: images whose sandboxes are kept warm at once (least recently used closed past it; default 8)');
  },
  async createEnvs(flags: TaskFlags, count: number, { log, engines }) {
    if (!flags.data || flags.tool) throw new ConfigError('--data', 'is needed: a Harbor task directory, or a folder of them');
    const timeout = timeoutMs(flags.timeout);
    const sandboxes = parseSandboxMode(flags.sandboxes ?? 'pooled');
    return createTaskEnvs(
      {
        data: flags.data,
        internetTasksOffline: flags.internetTasksOffline === true,
        sandboxes,
        keepWarmMs: sandboxes === 'pooled' ? keepWarmMs(flags.keepWarm) : 0,
        ...(flags.warmImages ? { maxWarmImages: positiveInteger('--warm-images', flags.warmImages) } : {}),
        ...(timeout ? { shell: { timeoutMs: timeout } } : {}),
        ...(flags.trajectories ? { trajectoryDir: flags.trajectories } : {}),
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
};
