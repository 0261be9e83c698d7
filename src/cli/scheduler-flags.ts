import type { Command } from 'commander';
import { DEFAULT_KEEP_WARM_SECONDS, defaultParallel, keepWarmMs, parseSandboxMode, type SandboxMode } from '../scheduler/index.js';
import { positiveInteger } from '../env/flag-values.js';

/** Commander attributes of the flags {@link addSchedulerFlags} adds. */
export interface SchedulerFlags {
  parallel?: string;
  sandboxes?: string;
  keepWarm?: string;
}

/**
 * Adds `--parallel <n>` (default: {@link defaultParallel}, what this machine sustains),
 * `--sandboxes pooled|fresh` and `--keep-warm <seconds>` to a command that plays episodes
 * through the episode scheduler.
 */
export function addSchedulerFlags(command: Command): Command {
  return command
    .option('--parallel <n>', `episodes in flight (default: ${defaultParallel()}, one per CPU core, at least 2, or the env's own where it sustains more (docs/performance.md); more for an LLM agent, which waits on the model)`)
    .option(
      '--sandboxes <mode>',
      'pooled (default: a warm pool shared by the envs, each used sandbox restored in place) or fresh ' +
        '(a new sandbox per episode and per gold run, removed after it; several times slower, see docs/episode-scheduler.md)',
      'pooled',
    )
    .option(
      '--keep-warm <seconds>',
      `pooled sandboxes: keep the clean ones running this long after the command ends, for the next command of the same ` +
        `configuration to take over instead of creating new ones (0: remove them at exit; \`intercode cleanup --warm\` removes them now). ` +
        `Default: INTERCODE_KEEP_WARM, else ${DEFAULT_KEEP_WARM_SECONDS}`,
    );
}

/**
 * The checked values. @throws ConfigError naming the flag.
 * @param envDefault episodes in flight without --parallel where the env sustains more than {@link defaultParallel} (EnvConstruction.defaultParallel).
 */
export function schedulerFlags(flags: SchedulerFlags, envDefault?: number): { parallel: number; sandboxes: SandboxMode; keepWarmMs: number } {
  return {
    parallel: flags.parallel === undefined ? (envDefault ?? defaultParallel()) : positiveInteger('--parallel', flags.parallel),
    sandboxes: parseSandboxMode(flags.sandboxes ?? 'pooled'),
    keepWarmMs: keepWarmMs(flags.keepWarm),
  };
}
