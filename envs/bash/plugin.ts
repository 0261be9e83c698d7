import { SUBMIT_AS_IS } from '../../src/agents/index.js';
import { timeoutMs } from '../../src/env/flag-values.js';
import { ConfigError } from '../../src/errors.js';
import { defaultGoldCacheDir } from '../../src/golds/gold-store.js';
import { firstDistinct, MAX_DERIVED, PATH } from '../exploration.js';
import { GOLD_CACHE_FLAGS } from '../gold-cache-flags.js';
import type { CommonEnvFlags, CreateEnvsOptions, EnvPlugin, EnvPurpose } from '../plugin.js';
import { BUILTIN_BASH_TASKS, bashEnvSpec, createBashEnvs } from './index.js';
import { BASH_BASES, bashTestbedRecipe, parseBashBase, type BashBase } from './images.js';
import { BASH_PROMPT } from './prompt.js';
import type { BashEnv } from './bash-env.js';
import type { HashMode } from './file-probe.js';
import { bashHarborTask } from './harbor-export.js';
import { parseResetMode, type ResetMode } from './intercode-reset.js';
import { goldText } from '../../src/datasets/index.js';
import { detectComparedGoldOutput, parseComparedGoldOutput, type ComparedGoldOutput } from './compared-gold-output.js';
import type { RecordedEpisode } from '../../src/trajectory/index.js';

interface BashFlags extends CommonEnvFlags {
  testbed?: string;
  base?: string;
  exec?: string;
  hash?: string;
  shell?: string;
  goldCache?: boolean;
  goldCacheDir?: string;
  reset?: string;
  evalObs?: string;
  tool?: boolean;
}

/**
 * The `--base` value, checked, or the default for the command: replays reproduce
 * InterCode's recordings, so they default to its system (as they default to its exec mode).
 * @throws ConfigError for an unknown base.
 */
export function chooseBashBase(value: string | undefined, purpose: EnvPurpose): BashBase {
  return parseBashBase(value ?? (purpose === 'replay' ? 'ubuntu-jammy' : 'debian-bookworm'));
}

/**
 * The `--reset` value, checked, or the default for the command: replays reproduce
 * InterCode's recordings, so they take its episode lifecycle (measured: more steps agree).
 * @throws ConfigError for an unknown mode.
 */
export function chooseResetMode(value: string | undefined, purpose: EnvPurpose): ResetMode {
  return parseResetMode(value ?? (purpose === 'replay' ? 'intercode' : 'exact'));
}

/**
 * The `--eval-obs` value, checked; without one, what a replayed recording's own logs show
 * (see {@link detectComparedGoldOutput}), else `full`.
 * @throws ConfigError for an unknown mode.
 */
export function chooseComparedGoldOutput(value: string | undefined, recording: readonly RecordedEpisode[] | undefined, log: (line: string) => void): ComparedGoldOutput {
  if (value !== undefined) return parseComparedGoldOutput(value);
  if (!recording) return 'full';
  const { mode, cut, longer } = detectComparedGoldOutput(recording);
  log(
    `gold output compared: ${mode} (detected from the recording: ${cut} episode(s) log a gold output cut to the agent output's length, ` +
      `${longer} a longer one; --eval-obs overrides)`,
  );
  return mode;
}

/** The bash environment. */
export const bashPlugin: EnvPlugin = {
  name: 'bash',
  builtInTasks: BUILTIN_BASH_TASKS,
  spec: bashEnvSpec,
  flags: [
    { flags: '--testbed <path>', description: "bash: a tarball extracted at / (e.g. InterCode's fs-1.tar), a directory placed at /testbed, or none (default: built-in)" },
    { flags: '--base <system>', description: `bash: the system the image is built on, ${BASH_BASES.join(' or ')} (InterCode's: Ubuntu 22.04, bash 5.1; default for replay); default debian-bookworm` },
    { flags: '--exec <mode>', description: 'bash: session (persistent shell; default for play/run/eval) or intercode (one exec per action as InterCode did; default for replay)' },
    { flags: '--hash <mode>', description: 'bash: how changed files are compared, intercode (as the original) or strict (default: intercode)' },
    { flags: '--shell <path>', description: 'bash: the shell intercode exec mode wraps actions in (/bin/sh for InterCode fs-0; default /bin/bash)' },
    ...GOLD_CACHE_FLAGS,
    {
      flags: '--reset <mode>',
      description:
        'bash: how episodes start, exact (a sandbox as the image made it; default for play/run/eval) or intercode (as InterCode, default for ' +
        'replay: each env keeps one agent and one gold sandbox for the run, reset with git reset --hard; git clean -fd, so git-ignored ' +
        'paths such as /root keep state, empty folders and /tmp vanish, and golds are never cached)',
    },
    {
      flags: '--eval-obs <mode>',
      description:
        "bash: the gold output the answer term compares, full (default) or tail (its last n characters, n the length of the agent's output, " +
        "as the scoring behind InterCode's recorded Try Again fs-1 and fs-3 logs did); replay detects it from the recording",
    },
  ],
  async createEnvs(flags: BashFlags, count: number, { purpose, log, engines, recording }: CreateEnvsOptions) {
    const exec = flags.exec ?? (purpose === 'replay' ? 'intercode' : 'session');
    const hash = flags.hash ?? 'intercode';
    if (exec !== 'session' && exec !== 'intercode') throw new ConfigError('--exec', `must be session or intercode, got "${exec}"`);
    if (hash !== 'intercode' && hash !== 'strict') throw new ConfigError('--hash', `must be intercode or strict, got "${hash}"`);
    if (flags.goldCache === false && flags.goldCacheDir !== undefined) throw new ConfigError('--gold-cache-dir', 'cannot go with --no-gold-cache');
    const base = chooseBashBase(flags.base, purpose);
    const reset = chooseResetMode(flags.reset, purpose);
    const comparedGoldOutput = chooseComparedGoldOutput(flags.evalObs, recording, log);
    const timeout = timeoutMs(flags.timeout);
    return createBashEnvs(
      {
        ...(flags.tool ? { data: null } : flags.data ? { data: flags.data } : {}),
        ...(flags.testbed ? { testbed: flags.testbed } : {}),
        base,
        execMode: exec,
        hashMode: hash,
        goldCache: flags.goldCache ?? true,
        ...(flags.goldCache === false ? {} : { goldCacheDir: flags.goldCacheDir ?? defaultGoldCacheDir() }),
        reset,
        comparedGoldOutput,
        ...(timeout ? { shell: { timeoutMs: timeout } } : {}),
        ...(flags.shell ? { intercodeShell: flags.shell } : {}),
        buildLog: log,
        engines,
      },
      count,
    );
  },
  goldActions: (task) => [goldText(task), 'submit'],
  agent: { prompt: BASH_PROMPT, stepScoring: SUBMIT_AS_IS },
  training: {
    exploration: {
      fixed: ['ls', 'ls -la /testbed', 'find /testbed -maxdepth 2', 'pwd'],
      fromObservation: (obs) => firstDistinct([...obs.matchAll(PATH)].map((m) => m[0]).filter((p) => /\.\w+$/.test(p)), MAX_DERIVED).map((p) => `cat ${p}`),
    },
    // NL2Bash: the corpus InterCode's bash tasks were adapted from (near-duplicates of held-out tasks are removed by train).
    corpus: { name: 'nl2bash', retrievedPerState: 8 },
  },
  images: {
    list: ({ testbed }) => [
      { name: 'bash', usedBy: 'every bash command on Debian 12 (the default --base)', byDefault: true, recipe: () => bashTestbedRecipe(testbed) },
      {
        name: 'bash:ubuntu-jammy',
        usedBy: "replay and --base ubuntu-jammy (InterCode's Ubuntu 22.04, bootstrapped from an Ubuntu mirror)",
        byDefault: false,
        recipe: () => bashTestbedRecipe(testbed, 'ubuntu-jammy'),
      },
    ],
  },
  harbor: { task: (env, task, flags: BashFlags) => bashHarborTask(env as BashEnv, task, (flags.hash ?? 'intercode') as HashMode, 'bash') },
};
