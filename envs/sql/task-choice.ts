import type { Task } from '../../src/datasets/index.js';
import type { ResetOptions } from '../../src/env/types.js';
import { EnvStateError } from '../../src/errors.js';

export { seededRandom } from '../../src/env/sandbox-env.js';

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
