/** The one gold verifier bash and SQL share (src/golds/gold-verifier.ts), over plain string outcomes. */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GoldStore } from '../../src/golds/gold-store.js';
import { GoldVerifier, type GoldRules, type GoldRun } from '../../src/golds/gold-verifier.js';

const CODEC = { encode: (x: string) => x, decode: (x: unknown) => (typeof x === 'string' ? x : undefined) };
const rules = (twiceInMemory: boolean): GoldRules<string> => ({ same: (a, b) => a === b, inconclusive: (x) => x === 'timed out', twiceInMemory });

/** A gold whose runs give `outcomes` in turn (the last one again after), counting them. */
function gold(...outcomes: string[]): { run: () => Promise<GoldRun<string>>; runs: () => number } {
  let n = 0;
  return {
    run: async () => {
      await new Promise((resolve) => setTimeout(resolve, 2));
      return { outcome: outcomes[Math.min(n++, outcomes.length - 1)]!, ranIn: 'new-sandboxes' };
    },
    runs: () => n,
  };
}

describe('GoldVerifier', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'intercode-gold-verifier-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('requests for one key while it is verified share the verification: two runs in all, one outcome', async () => {
    const g = gold('a');
    const verifier = new GoldVerifier(rules(true));
    const answers = await Promise.all([1, 2, 3].map(() => verifier.get('k', g.run)));
    expect(answers).toEqual([1, 2, 3].map(() => ({ outcome: 'a', cached: false })));
    expect(g.runs()).toBe(2);
    expect(await verifier.get('k', g.run)).toEqual({ outcome: 'a', cached: true });
    expect(verifier.size).toBe(1);
  });

  it('without a store, twiceInMemory false runs a gold once and keeps it; true runs it twice', async () => {
    const once = gold('a');
    await new GoldVerifier(rules(false)).get('k', once.run);
    expect(once.runs()).toBe(1);
    const twice = gold('a');
    await new GoldVerifier(rules(true)).get('k', twice.run);
    expect(twice.runs()).toBe(2);
  });

  it('with a store, a gold is run twice whatever twiceInMemory says, and the verdict stored', async () => {
    const g = gold('a');
    await new GoldVerifier(rules(false), new GoldStore(dir, CODEC)).get('k', g.run, { gold: 'x' });
    expect(g.runs()).toBe(2);
    expect(await new GoldStore(dir, CODEC).get({ gold: 'x' })).toMatchObject({ stable: true, outcome: 'a', verifiedIn: 'new-sandboxes' });
  });

  it('an inconclusive run ends the verification: nothing kept in memory or on disk, the next request runs again', async () => {
    for (const outcomes of [['timed out'], ['a', 'timed out']]) {
      const g = gold(...outcomes);
      const verifier = new GoldVerifier(rules(true), new GoldStore(dir, CODEC));
      expect((await verifier.get('k', g.run, { gold: 'x' })).cached).toBe(false);
      expect(verifier.size).toBe(0);
      expect(verifier.isUnstable('k')).toBe(false);
      expect(await readdir(dir)).toEqual([]);
    }
  });

  it('two runs that differ: unstable, and every later request runs the gold once', async () => {
    const g = gold('a', 'b', 'c', 'd');
    const verifier = new GoldVerifier(rules(true));
    expect(await verifier.get('k', g.run)).toEqual({ outcome: 'b', cached: false });
    expect(verifier.isUnstable('k')).toBe(true);
    expect(await verifier.get('k', g.run)).toEqual({ outcome: 'c', cached: false });
    expect(g.runs()).toBe(3);
  });

  it('runs that ran somewhere the store does not trust are kept in memory only', async () => {
    const store = new GoldStore(dir, CODEC, 'fixed-data-server');
    const verifier = new GoldVerifier(rules(true), store);
    const g = gold('a'); // ran in new sandboxes: not what this store trusts
    expect(await verifier.get('k', g.run, { gold: 'x' })).toEqual({ outcome: 'a', cached: false });
    expect(await readdir(dir)).toEqual([]);
    expect(await verifier.get('k', g.run, { gold: 'x' })).toEqual({ outcome: 'a', cached: true });
  });
});
