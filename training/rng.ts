/**
 * Seeded randomness for training. Every random choice of a run (weight initialisation,
 * minibatches, the actions sampled in each episode) comes from a generator derived from
 * the run's seed and a label such as `pg/3/17`, never from a shared stream, so a run resumed
 * from a checkpoint draws exactly what the uninterrupted run would have drawn.
 */
import { seededRandom } from '../src/env/episode.js';

/** A source of uniform numbers in [0, 1). */
export type Random = () => number;

/** FNV-1a over the UTF-16 code units of `text`: a 32-bit hash, stable across runs and platforms. */
export function fnv1a(text: string, seed = 0x811c9dc5): number {
  let hash = seed >>> 0;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/**
 * A 32-bit hash whose low bits are as good as its high ones: FNV-1a followed by
 * MurmurHash3's finaliser. (FNV-1a alone leaves the low bits of similar words equal —
 * "notes" and "tests" agree in their low 12 bits — so taking it modulo a feature count collides.)
 */
export function hash32(text: string): number {
  let h = fnv1a(text);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Mulberry32 seeded with `seed` (the envs' task-choice generator). */
export const mulberry32: (seed: number) => Random = seededRandom;

/** The generator for one labelled use of a run's seed (`derive(7, 'pg', 3, 12)`). */
export function derive(seed: number, ...label: (string | number)[]): Random {
  return mulberry32(fnv1a(label.join('/'), fnv1a(String(seed))));
}

/** A standard normal draw (Box–Muller). */
export function normal(random: Random): number {
  const u = 1 - random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
}

/** Fisher–Yates shuffle of a copy of `items`. */
export function shuffled<T>(items: readonly T[], random: Random): T[] {
  const out = items.slice();
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
