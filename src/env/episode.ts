import type { Task } from '../datasets/index.js';
import { EnvStateError } from '../errors.js';
import type { ResetOptions, Score, StepResult } from './types.js';

/** Mulberry32: a small seeded generator, so `reset()` picks the same tasks for the same seed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The task `reset(options)` asks for: the one given, the one at an index, or a random one.
 * @throws EnvStateError for an index out of range, or any index in tool mode.
 */
export function chooseTask(options: ResetOptions, dataset: readonly Task[], random: () => number): Task | null {
  if (typeof options.task === 'object') return options.task;
  if (dataset.length === 0) {
    if (options.task !== undefined) throw new EnvStateError(`reset({ task: ${options.task} }) in tool mode: this env has no dataset`);
    return null;
  }
  const index = options.task ?? Math.floor(random() * dataset.length);
  const task = dataset[index];
  if (!Number.isInteger(index) || !task) {
    throw new EnvStateError(`Task index ${index} is out of range: the dataset has ${dataset.length} tasks (0–${dataset.length - 1})`);
  }
  return task;
}

/** The score of a `skip` (and of a `submit` with no task): 0. */
export const skippedScore = (verb: 'submit' | 'skip'): Score => ({ reward: 0, parts: {}, details: { skipped: verb === 'skip' } });

/** The step that ends an episode on submit or skip: the last observation again, with the score. */
export function endStep(lastObservation: string, score: Score): StepResult {
  return {
    observation: lastObservation,
    reward: score.reward,
    terminated: true,
    truncated: false,
    info: { actionExecuted: true, exitCode: 0, durationMs: 0, events: [], score },
  };
}
