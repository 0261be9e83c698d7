import { describe, expect, it } from 'vitest';
import { tempDir } from '../setup/temp-dirs.js';
import { ReplayBuffer, readTransitions } from '../../training/buffer/replay-buffer.js';
import { mulberry32 } from '../../training/rng.js';
import { numberedTransition } from './fixtures/transitions.js';

const ns = (buffer: ReplayBuffer) => [...buffer.transitions()].map((t) => t.info.n);

describe('ReplayBuffer', () => {
  it('evicts the oldest transitions past its capacity', () => {
    const buffer = new ReplayBuffer({ capacity: 5 });
    for (let n = 0; n < 8; n++) buffer.add(numberedTransition(n));
    expect(buffer.size).toBe(5);
    expect(ns(buffer)).toEqual([3, 4, 5, 6, 7]);
  });

  it('assembles only the episodes wholly inside it', () => {
    const buffer = new ReplayBuffer({ capacity: 7 });
    for (let n = 0; n < 9; n++) buffer.add(numberedTransition(n));
    // transitions 2..8: episode 0 lost steps 0 and 1; episodes 1 and 2 are whole.
    expect(buffer.episodes().map((e) => [e.id, e.transitions.length, e.reward])).toEqual([
      ['ep-1', 3, numberedTransition(5).reward],
      ['ep-2', 3, numberedTransition(8).reward],
    ]);
  });

  it('samples uniformly', () => {
    const buffer = new ReplayBuffer({ capacity: 4 });
    for (let n = 0; n < 6; n++) buffer.add(numberedTransition(n));
    const counts = new Map<unknown, number>();
    for (const t of buffer.sample(20_000, mulberry32(3))) counts.set(t.info.n, (counts.get(t.info.n) ?? 0) + 1);
    expect([...counts.keys()].sort()).toEqual([2, 3, 4, 5]);
    for (const c of counts.values()) expect(c / 20_000).toBeCloseTo(0.25, 1);
  });

  it('samples in proportion to priority^alpha, with importance weights relative to the rarest', () => {
    const buffer = new ReplayBuffer({ capacity: 3, alpha: 1 });
    for (let n = 0; n < 3; n++) buffer.add(numberedTransition(n));
    buffer.updatePriorities([0, 1, 2], [1, 2, 5]);
    const drawn = buffer.samplePrioritized(40_000, mulberry32(9), 0.5);
    const share = (slot: number) => drawn.slots.filter((s) => s === slot).length / drawn.slots.length;
    expect(share(0)).toBeCloseTo(1 / 8, 1);
    expect(share(1)).toBeCloseTo(2 / 8, 1);
    expect(share(2)).toBeCloseTo(5 / 8, 1);
    const weightOf = (slot: number) => drawn.weights[drawn.slots.indexOf(slot)]!;
    expect(weightOf(0)).toBeCloseTo(1, 6);
    expect(weightOf(2)).toBeCloseTo((5 / 1) ** -0.5, 6);
    expect(drawn.transitions[0]).toBe([...buffer.transitions()][drawn.slots[0]!]);
  });

  it('gives new transitions the largest priority seen so far', () => {
    const buffer = new ReplayBuffer({ capacity: 2, alpha: 1 });
    buffer.add(numberedTransition(0));
    buffer.updatePriorities([0], [10]);
    buffer.add(numberedTransition(1));
    const drawn = buffer.samplePrioritized(10_000, mulberry32(1));
    expect(drawn.slots.filter((s) => s === 1).length / 10_000).toBeCloseTo(0.5, 1);
  });

  it('persists: a reopened buffer holds the newest transitions up to its capacity', () => {
    const dir = tempDir('buffer-');
    const first = ReplayBuffer.open(dir, { capacity: 50, segmentBytes: 1024 }).buffer;
    for (let n = 0; n < 120; n++) first.add(numberedTransition(n));
    first.close();
    const { buffer, droppedTailBytes } = ReplayBuffer.open(dir, { capacity: 50 });
    expect(droppedTailBytes).toBe(0);
    expect(ns(buffer)).toEqual(Array.from({ length: 50 }, (_, i) => 70 + i));
    expect([...buffer.transitions()][10]).toEqual(numberedTransition(80));
    // Segments wholly evicted were deleted; what is left still covers the capacity.
    const onDisk = readTransitions(dir);
    expect(onDisk.length).toBeGreaterThanOrEqual(50);
    expect(onDisk.length).toBeLessThan(120);
    buffer.close();
  });

  it('refuses to sample when empty and a bad capacity', () => {
    expect(() => new ReplayBuffer({ capacity: 0 })).toThrow(/capacity must be a positive integer/);
    expect(() => new ReplayBuffer({ capacity: 2 }).sample(1, Math.random)).toThrow(/empty/);
  });
});
