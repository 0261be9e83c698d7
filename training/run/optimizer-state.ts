/**
 * Adam's state for checkpoints. tfjs's `getWeights()` gives the iteration count and the
 * moment estimates; on `setWeights()` it recomputes β₁ᵗ and β₂ᵗ with `pow`, which rounds
 * differently from the running products a live optimizer keeps, so a resumed run would
 * drift from the uninterrupted one in the last bits. The two products are saved and put
 * back as well, which makes a resumed run bit-identical.
 */
import * as tf from '@tensorflow/tfjs';

export interface SavedTensor {
  name: string;
  shape: number[];
  data: Float32Array;
}

/** The running products β₁ᵗ, β₂ᵗ an AdamOptimizer keeps (not part of its public typings). */
type AdamProducts = { accBeta1: tf.Variable; accBeta2: tf.Variable };
const PRODUCTS = ['accBeta1', 'accBeta2'] as const;

export async function exportOptimizer(optimizer: tf.AdamOptimizer): Promise<SavedTensor[]> {
  const weights = await optimizer.getWeights();
  const saved = weights.map((w) => ({ name: w.name, shape: w.tensor.shape.slice(), data: Float32Array.from(w.tensor.dataSync()) }));
  // The moments are the optimizer's live variables; only the iteration count is a fresh tensor.
  for (const w of weights) if (!(w.tensor instanceof tf.Variable)) w.tensor.dispose();
  const products = optimizer as unknown as AdamProducts;
  for (const key of PRODUCTS) saved.push({ name: key, shape: [], data: Float32Array.from(products[key].dataSync()) });
  return saved;
}

export async function importOptimizer(optimizer: tf.AdamOptimizer, saved: readonly SavedTensor[]): Promise<void> {
  const products = saved.filter((s) => (PRODUCTS as readonly string[]).includes(s.name));
  const weights = saved.filter((s) => !(PRODUCTS as readonly string[]).includes(s.name)).map((w) => ({ name: w.name, tensor: tf.tensor(w.data, w.shape) }));
  await optimizer.setWeights(weights);
  // setWeights makes variables sharing these tensors' data (reference-counted): the tensors themselves can go.
  for (const w of weights) w.tensor.dispose();
  for (const p of products) tf.tidy(() => (optimizer as unknown as AdamProducts)[p.name as (typeof PRODUCTS)[number]].assign(tf.scalar(p.data[0]!)));
}
