import { availableParallelism } from 'node:os';

/**
 * Episodes in flight when a command is not told (`--parallel`): one per CPU core, at least 2.
 * Measured on the 2-core machine of docs/episode-scheduler.md (40 NL2Bash fs-1 gold episodes,
 * verified golds on disk, the machine shared with other work): throughput after set-up was
 * highest with 1–2 envs and fell with 4 and 8, because every env brings pooled sandboxes whose
 * creation (about ten restores' worth of CPU each) competes with the episodes, and the gold
 * commands themselves keep the cores busy. An LLM-driven `eval` waits on the model, not the
 * cores: give it a higher `--parallel` there.
 */
export function defaultParallel(cores: number = availableParallelism()): number {
  return Math.max(2, Math.floor(cores));
}
