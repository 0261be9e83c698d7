import type { Command } from 'commander';
import type { BashEnvOptions } from '../../envs/bash/index.js';
import type { ExecMode } from '../../envs/bash/bash-env.js';
import { ConfigError } from '../errors.js';

/** Flags every bash command shares (play, run, replay). */
export function addBashFlags(command: Command, defaultExec: ExecMode): Command {
  return command
    .option('--data <file>', 'task file: InterCode JSON, JSONL, CSV or TSV (default: the built-in bash tasks)')
    .option('--testbed <path>', "testbed: a tarball extracted at / (e.g. InterCode's fs-1.tar) or a directory placed at /testbed, or none (default: built-in)")
    .option('--exec <mode>', 'how actions run: session (persistent bash) or intercode (one exec per action, as InterCode did)', defaultExec)
    .option('--hash <mode>', 'how changed files are compared: intercode (as the original) or strict', 'intercode')
    .option('--timeout <seconds>', 'time limit per command', '10')
    .option('--shell <path>', 'shell that intercode exec mode wraps actions in (/bin/sh for InterCode fs-0)', '/bin/bash')
    .option('--no-gold-cache', 'run the gold command afresh for every score')
    .option('--trajectories <dir>', 'write an InterCode-format log per finished episode here');
}

export interface BashFlags {
  data?: string;
  testbed?: string;
  exec: string;
  hash: string;
  timeout: string;
  shell: string;
  goldCache: boolean;
  trajectories?: string;
}

/** @throws ConfigError unless `value` names the bash environment (the only one so far). */
export function requireBashEnv(flag: string, value: string): void {
  if (value !== 'bash') throw new ConfigError(flag, `must be bash (other environments come later), got "${value}"`);
}

/** @returns the flag's value as a positive integer. @throws ConfigError naming the flag. */
export function positiveInteger(flag: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new ConfigError(flag, `must be a positive integer, got "${value}"`);
  return n;
}

/** Turns parsed flags into env options. @throws ConfigError naming the bad flag. */
export function bashOptionsFrom(flags: BashFlags, log: (line: string) => void): Partial<BashEnvOptions> {
  if (flags.exec !== 'session' && flags.exec !== 'intercode') throw new ConfigError('--exec', `must be session or intercode, got "${flags.exec}"`);
  if (flags.hash !== 'intercode' && flags.hash !== 'strict') throw new ConfigError('--hash', `must be intercode or strict, got "${flags.hash}"`);
  const timeout = Number(flags.timeout);
  if (!(timeout > 0)) throw new ConfigError('--timeout', `must be a positive number of seconds, got "${flags.timeout}"`);
  return {
    ...(flags.data ? { data: flags.data } : {}),
    ...(flags.testbed ? { testbed: flags.testbed } : {}),
    execMode: flags.exec,
    hashMode: flags.hash,
    goldCache: flags.goldCache,
    shell: { timeoutMs: timeout * 1000 },
    intercodeShell: flags.shell,
    ...(flags.trajectories ? { trajectoryDir: flags.trajectories } : {}),
    buildLog: log,
  };
}
