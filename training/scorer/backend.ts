/**
 * Chooses the TensorFlow.js backend: the native `@tensorflow/tfjs-node` when its addon
 * loads (it is an optional dependency whose native build npm does not run here), else the
 * portable WebAssembly backend. Training code imports `@tensorflow/tfjs` and works the same
 * on either.
 */
import * as tf from '@tensorflow/tfjs';

export interface BackendChoice {
  /** `tensorflow` (tfjs-node) or `wasm`. */
  name: string;
  /** Why tfjs-node is not used, when it is not. */
  fallbackReason?: string;
}

let chosen: Promise<BackendChoice> | undefined;

async function choose(): Promise<BackendChoice> {
  try {
    await import('@tensorflow/tfjs-node');
    if (await tf.setBackend('tensorflow')) return { name: 'tensorflow' };
  } catch (error) {
    await import('@tensorflow/tfjs-backend-wasm');
    if (!(await tf.setBackend('wasm'))) throw new Error('neither tfjs-node nor the tfjs wasm backend could be initialised', { cause: error });
    return { name: 'wasm', fallbackReason: ((error as Error).message.split('\n')[0] ?? '').slice(0, 160) };
  }
  throw new Error('tfjs-node loaded but its "tensorflow" backend did not initialise');
}

/**
 * The line a command logs for `choice`. The WebAssembly fallback is the normal case where npm
 * runs no install scripts (tfjs-node's addon is then never built), so it reads as a note, not
 * a failure; why the addon did not load stays in it, for whoever wants the native one.
 */
export function describeBackend(choice: BackendChoice): string {
  if (!choice.fallbackReason) return `tfjs backend: ${choice.name}`;
  return (
    `note: training runs on tfjs's portable ${choice.name} backend; the optional native one (@tensorflow/tfjs-node) is faster ` +
    `but its addon is not built here (usual where npm runs no install scripts; docs/training.md says how to build it). Its loader said: ${choice.fallbackReason}`
  );
}

/** Initialises the backend once per process and reports it to `log`. */
export async function selectBackend(log: (line: string) => void = () => undefined): Promise<BackendChoice> {
  const first = chosen === undefined;
  chosen ??= choose();
  const choice = await chosen;
  if (first) log(describeBackend(choice));
  return choice;
}
