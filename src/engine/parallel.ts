import { availableParallelism } from 'node:os';

/**
 * Episodes in flight when a command is not told (`--parallel`): four per CPU core, at least
 * 2 and at most 16. An episode spends most of its time waiting on the engine (a restore, a
 * shell round trip), so more episodes than cores keep the cores busy; past about four per
 * core, gold episodes/s stopped rising on the 2-core machine the figures in
 * docs/episode-engine.md come from (measured there with `run bash --parallel 1…16`).
 */
export function defaultParallel(cores: number = availableParallelism()): number {
  return Math.max(2, Math.min(16, 4 * Math.max(1, Math.floor(cores))));
}
