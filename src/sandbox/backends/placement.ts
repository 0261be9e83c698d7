/** What placement needs to know of an engine. */
export interface EngineLoad {
  weight: number;
  /** Sandboxes it holds now, including creations under way. */
  load: number;
}

/**
 * The engine the next sandbox goes to: the one whose load after taking it, relative to
 * its weight, is lowest — so loads follow the weights (1:2 gets 4 and 8 of 12) whatever
 * the order of creations and removals. Ties go to the larger weight, then to the earlier.
 * @returns undefined when there is no candidate.
 */
export function pickEngine<T extends EngineLoad>(candidates: readonly T[]): T | undefined {
  let best: T | undefined;
  for (const c of candidates) {
    if (!best) {
      best = c;
      continue;
    }
    const diff = (c.load + 1) / c.weight - (best.load + 1) / best.weight;
    if (diff < 0 || (diff === 0 && c.weight > best.weight)) best = c;
  }
  return best;
}
