import type { Command } from 'commander';
import type { CommonEnvFlags, CreateEnvsOptions, EnvCli } from '../../src/cli/env-cli.js';
import { timeoutMs } from '../../src/cli/env-cli.js';
import type { Task } from '../../src/datasets/index.js';
import { ConfigError } from '../../src/errors.js';
import { APPS_DEFAULT_FUNCTION } from './python-env.js';
import { goldEntry, toPythonTask, type EntryRule } from './python-task.js';
import type { SandboxEnv } from '../../src/env/sandbox-env.js';
import { pythonHarborTask } from './harbor-export.js';
import { DEFAULT_PYTHON_SESSION_OPTIONS } from './python-session.js';
import { createPythonEnvs } from './index.js';

interface PythonFlags extends CommonEnvFlags {
  testTimeout?: string;
  entry?: string;
  afterScore?: string;
  tool?: boolean;
}

/** An APPS gold program run as a function: its text executed as a fresh `__main__` module. */
function appsGoldAction(program: string): string {
  return `def ${APPS_DEFAULT_FUNCTION}():\n    exec(compile(${JSON.stringify(program)}, '<gold>', 'exec'), {'__name__': '__main__'})`;
}

/** The Python environment's CLI flags and env construction. */
export const pythonCli: EnvCli = {
  name: 'python',
  flagNames: ['testTimeout', 'entry', 'afterScore'],
  addFlags(command: Command): void {
    command
      .option('--test-timeout <seconds>', 'python: time limit of each unit test (default 5)')
      .option('--entry <rule>', 'python: the gold function a submission is bound to: tested (the one the tests call; default) or first-def (InterCode; default for replay)')
      .option(
        '--after-score <mode>',
        "python: the interpreter after a score: keep (the agent's; default) or gold-state (the gold's namespace, as InterCode's scoring left it; default for replay)",
      );
  },
  async createEnvs(flags: PythonFlags, count: number, { purpose, log, engines }: CreateEnvsOptions) {
    const entry = flags.entry ?? (purpose === 'replay' ? 'first-def' : 'tested');
    if (entry !== 'tested' && entry !== 'first-def') throw new ConfigError('--entry', `must be tested or first-def, got "${entry}"`);
    const afterScore = flags.afterScore ?? (purpose === 'replay' ? 'gold-state' : 'keep');
    if (afterScore !== 'keep' && afterScore !== 'gold-state') throw new ConfigError('--after-score', `must be keep or gold-state, got "${afterScore}"`);
    const timeout = timeoutMs(flags.timeout);
    let testTimeout: number | undefined;
    if (flags.testTimeout !== undefined) {
      testTimeout = Number(flags.testTimeout) * 1000;
      if (!(testTimeout > 0)) throw new ConfigError('--test-timeout', `must be a positive number of seconds, got "${flags.testTimeout}"`);
    }
    return createPythonEnvs(
      {
        ...(flags.tool ? { data: null } : flags.data ? { data: flags.data } : {}),
        ...(timeout ? { session: { timeoutMs: timeout } } : {}),
        ...(testTimeout ? { testTimeoutMs: testTimeout } : {}),
        entryRule: entry as EntryRule,
        // Replays reproduce InterCode's logs, whose scoring left the gold's namespace behind.
        afterScore,
        ...(flags.trajectories ? { trajectoryDir: flags.trajectories } : {}),
        buildLog: log,
        engines,
      },
      count,
    );
  },
  goldActions(task: Task): string[] {
    const python = toPythonTask(task, 'the dataset');
    if (python.kind === 'apps') return [appsGoldAction(python.gold), `submit ${APPS_DEFAULT_FUNCTION}`];
    return [python.gold, `submit ${goldEntry(python, 'tested')}`];
  },
  harborTask(env, task, flags: PythonFlags) {
    return pythonHarborTask(env as SandboxEnv, task, {
      entryRule: (flags.entry ?? 'tested') as EntryRule,
      testTimeoutSec: flags.testTimeout !== undefined ? Number(flags.testTimeout) : 5,
      memoryBytes: DEFAULT_PYTHON_SESSION_OPTIONS.memoryBytes,
      dataFile: flags.data ?? 'the built-in tasks',
    });
  },
};
