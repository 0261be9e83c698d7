/**
 * A sum tree over a fixed number of slots: set a slot's weight and draw a slot with
 * probability proportional to its weight, both in O(log n). The structure behind
 * proportional prioritized replay (Schaul et al., 2016).
 */
export class SumTree {
  private readonly size: number;
  private readonly tree: Float64Array;

  constructor(readonly capacity: number) {
    let size = 1;
    while (size < capacity) size *= 2;
    this.size = size;
    this.tree = new Float64Array(2 * size);
  }

  get total(): number {
    return this.tree[1]!;
  }

  get(slot: number): number {
    return this.tree[this.size + slot]!;
  }

  set(slot: number, weight: number): void {
    let node = this.size + slot;
    this.tree[node] = weight;
    for (node >>= 1; node >= 1; node >>= 1) this.tree[node] = this.tree[2 * node]! + this.tree[2 * node + 1]!;
  }

  /** The slot whose cumulative-weight interval holds `mass` (0 ≤ mass < total). */
  find(mass: number): number {
    let node = 1;
    while (node < this.size) {
      const left = 2 * node;
      if (mass < this.tree[left]! || this.tree[left + 1] === 0) node = left;
      else {
        mass -= this.tree[left]!;
        node = left + 1;
      }
    }
    return node - this.size;
  }
}

/** The minimum over a fixed number of slots, kept in O(log n) per update (empty slots are +∞). */
export class MinTree {
  private readonly size: number;
  private readonly tree: Float64Array;

  constructor(readonly capacity: number) {
    let size = 1;
    while (size < capacity) size *= 2;
    this.size = size;
    this.tree = new Float64Array(2 * size).fill(Infinity);
  }

  get min(): number {
    return this.tree[1]!;
  }

  set(slot: number, value: number): void {
    let node = this.size + slot;
    this.tree[node] = value;
    for (node >>= 1; node >= 1; node >>= 1) this.tree[node] = Math.min(this.tree[2 * node]!, this.tree[2 * node + 1]!);
  }
}
