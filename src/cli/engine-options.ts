import type { Command } from 'commander';
import { defaultParallel, parseSandboxMode, type SandboxMode } from '../engine/index.js';
import { positiveInteger } from './env-cli.js';

/** Commander attributes of the flags {@link addEpisodeEngineFlags} adds. */
export interface EpisodeEngineFlags {
  parallel?: string;
  sandboxes?: string;
}

/**
 * Adds `--parallel <n>` (default: {@link defaultParallel}, what this machine sustains) and
 * `--sandboxes pooled|fresh` to a command that plays episodes through the episode engine.
 */
export function addEpisodeEngineFlags(command: Command): Command {
  return command
    .option('--parallel <n>', `episodes in flight (default: ${defaultParallel()}, one per CPU core, at least 2; more for an LLM agent, which waits on the model)`)
    .option(
      '--sandboxes <mode>',
      'pooled (default: a warm pool shared by the envs, each used sandbox restored in place) or fresh ' +
        '(a new sandbox per episode and per gold run, removed after it; several times slower, see docs/episode-engine.md)',
      'pooled',
    );
}

/** The checked values. @throws ConfigError naming the flag. */
export function episodeEngineFlags(flags: EpisodeEngineFlags): { parallel: number; sandboxes: SandboxMode } {
  return {
    parallel: flags.parallel === undefined ? defaultParallel() : positiveInteger('--parallel', flags.parallel),
    sandboxes: parseSandboxMode(flags.sandboxes ?? 'pooled'),
  };
}
