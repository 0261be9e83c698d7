import type { StepScoringRule } from '../../src/agents/index.js';
import type { Task } from '../../src/datasets/index.js';
import { timeoutMs } from '../../src/env/flag-values.js';
import { ConfigError } from '../../src/errors.js';
import type { CommonEnvFlags, CreateEnvsOptions, EnvPlugin } from '../plugin.js';
import { pythonRecipe } from './images.js';
import { BUILTIN_PYTHON_TASKS, createPythonEnvs, pythonEnvSpec } from './index.js';
import { PYTHON_PROMPT } from './prompt.js';
import { APPS_DEFAULT_FUNCTION } from './python-env.js';
import { goldEntry, toPythonTask, type EntryRule } from './python-task.js';
import type { SandboxEnv } from '../../src/env/sandbox-env.js';
import { pythonHarborTask } from './harbor-export.js';
import { DEFAULT_PYTHON_SESSION_OPTIONS } from './python-session.js';

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

/** InterCode's test for a Python action that defines a function: its first line, exactly `def <name>(`. */
const DEFINES_FUNCTION = /^def (\w+)\(/;

/** `eval_n_turn.py`: an action defining a function is followed by `submit <its name>`; any other action is not scored. */
export const pythonStepScoring: StepScoringRule = (action) => {
  const defined = DEFINES_FUNCTION.exec(action)?.[1];
  return defined === undefined ? { kind: 'unscored' } : { kind: 'submit', submission: defined };
};

/** The Python environment. */
export const pythonPlugin: EnvPlugin = {
  name: 'python',
  builtInTasks: BUILTIN_PYTHON_TASKS,
  spec: pythonEnvSpec,
  flags: [
    { flags: '--test-timeout <seconds>', description: 'python: time limit of each unit test (default 5)' },
    { flags: '--entry <rule>', description: 'python: the gold function a submission is bound to: tested (the one the tests call; default) or first-def (InterCode; default for replay)' },
    {
      flags: '--after-score <mode>',
      description: "python: the interpreter after a score: keep (the agent's; default) or gold-state (the gold's namespace, as InterCode's scoring left it; default for replay)",
    },
  ],
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
  agent: { prompt: PYTHON_PROMPT, stepScoring: pythonStepScoring },
  training: { exploration: { fixed: ['print(dir())', 'help()'], fromObservation: () => [] } },
  images: { list: () => [{ name: 'python', usedBy: 'every python command', byDefault: true, recipe: pythonRecipe }] },
  harbor: {
    task(env, task, flags: PythonFlags) {
      return pythonHarborTask(env as SandboxEnv, task, {
        entryRule: (flags.entry ?? 'tested') as EntryRule,
        testTimeoutSec: flags.testTimeout !== undefined ? Number(flags.testTimeout) : 5,
        memoryBytes: DEFAULT_PYTHON_SESSION_OPTIONS.memoryBytes,
        dataFile: flags.data ?? 'the built-in tasks',
      });
    },
  },
};
