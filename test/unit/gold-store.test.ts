/**
 * Golds verified once: the on-disk GoldStore (keys, atomic entries, unreadable files), the
 * bash GoldCache over it (a second process trusts verified golds without running them, and
 * re-runs the non-deterministic ones once per score), and BashEnv.goldKey: a changed input
 * invalidates exactly the entries it affects. No Docker: gold runs are scripted.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BashEnv, type BashEnvConfig } from '../../envs/bash/bash-env.js';
import { bashGoldStore, GoldCache } from '../../envs/bash/gold-cache.js';
import type { BashOutcome } from '../../envs/bash/reward.js';
import type { Task } from '../../src/datasets/index.js';
import { defaultGoldCacheDir, GoldStore } from '../../src/golds/gold-store.js';
import { dockerSystemView } from '../../src/sandbox/docker/container-creation.js';
import type { SandboxRuntime } from '../../src/sandbox/types.js';
import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS } from '../../src/sandbox/types.js';
import { makeTempDir } from '../datasets/tmp-files.js';

const temps: { remove: () => Promise<void> }[] = [];
async function tempDir(): Promise<string> {
  const made = await makeTempDir();
  temps.push(made);
  return made.dir;
}
afterEach(async () => {
  await Promise.all(temps.splice(0).map((t) => t.remove()));
});

const outcome = (observation: string, extra: Partial<BashOutcome> = {}): BashOutcome => ({
  observation,
  changes: [['testbed/new.txt', '??']],
  hashes: new Map([['testbed/new.txt', 'd41d8cd98f00b204e9800998ecf8427e']]),
  ...extra,
});

describe('GoldStore', () => {
  it('round-trips an outcome under a key whatever the key fields\' order, and misses any other key', async () => {
    const store = bashGoldStore(await tempDir());
    expect(await store.put({ image: 'a', task: { query: 'q', gold: 'ls' } }, { stable: true, outcome: outcome('x\n'), verifiedIn: 'new-sandboxes' })).toBe(true);
    const hit = await store.get({ task: { gold: 'ls', query: 'q' }, image: 'a' });
    expect(hit).toEqual({ stable: true, outcome: outcome('x\n'), verifiedIn: 'new-sandboxes' });
    expect(await store.get({ image: 'b', task: { query: 'q', gold: 'ls' } })).toBeUndefined();
    expect(await store.get({ image: 'a', task: { query: 'q', gold: 'ls ' } })).toBeUndefined();
  });

  it('keeps the verdict of a non-deterministic gold', async () => {
    const store = bashGoldStore(await tempDir());
    await store.put({ gold: 'date' }, { stable: false, verifiedIn: 'new-sandboxes' });
    expect(await store.get({ gold: 'date' })).toEqual({ stable: false, verifiedIn: 'new-sandboxes' });
  });

  it('keeps a gold\'s duration with either verdict; an ill-typed duration is left out, the entry still served', async () => {
    const dir = await tempDir();
    const store = bashGoldStore(dir);
    await store.put({ gold: 'ls' }, { stable: true, outcome: outcome('x\n'), durationMs: 12.5, verifiedIn: 'new-sandboxes' });
    await store.put({ gold: 'date' }, { stable: false, durationMs: 3, verifiedIn: 'new-sandboxes' });
    expect(await store.get({ gold: 'ls' })).toEqual({ stable: true, outcome: outcome('x\n'), verifiedIn: 'new-sandboxes', durationMs: 12.5 });
    expect(await store.get({ gold: 'date' })).toEqual({ stable: false, verifiedIn: 'new-sandboxes', durationMs: 3 });
    for (const bad of ['-1', '"12"', 'null']) {
      const path = store.pathOf({ gold: 'ls' });
      const entry = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
      await writeFile(path, JSON.stringify({ ...entry, durationMs: JSON.parse(bad) }));
      expect(await store.get({ gold: 'ls' }), bad).toEqual({ stable: true, outcome: outcome('x\n'), verifiedIn: 'new-sandboxes' });
    }
  });

  it('treats a truncated, foreign-key, wrong-format or ill-typed entry as absent, and the next put replaces it', async () => {
    const dir = await tempDir();
    const store = bashGoldStore(dir);
    const key = { gold: 'ls' };
    const path = store.pathOf(key);
    await mkdir(dir, { recursive: true });
    for (const body of [
      '{"format":1,"key":{"gold":"ls"},"stable":tr',
      JSON.stringify({ format: 1, key: { gold: 'rm -rf /' }, stable: true, outcome: { observation: 'x', changes: [], hashes: [] } }),
      JSON.stringify({ format: 0, key, stable: true, outcome: { observation: 'x', changes: [], hashes: [] } }),
      JSON.stringify({ format: 1, key, stable: true, outcome: { observation: 7, changes: [], hashes: [] } }),
      JSON.stringify({ format: 1, key, stable: true, outcome: { observation: 'x', changes: [['a']], hashes: [] } }),
      JSON.stringify({ format: 1, key, stable: 'yes' }),
    ]) {
      await writeFile(path, body);
      expect(await store.get(key), body).toBeUndefined();
    }
    await store.put(key, { stable: true, outcome: outcome('y'), verifiedIn: 'new-sandboxes' });
    expect((await store.get(key))?.stable).toBe(true);
    expect((await readdir(dir)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('ignores an entry an earlier version wrote (format 1: verified in sandboxes restored in place), and one that does not say it was verified in new sandboxes', async () => {
    const dir = await tempDir();
    const store = bashGoldStore(dir);
    const key = { image: 'a', task: { query: 'q', gold: 'du -sh /workspace' } };
    const restoredAnswer = { observation: '116K\t/workspace\n', changes: [], hashes: [] };
    // Where version 1 kept it: named by the hash of its format and key, the body as it wrote it.
    const v1Name = `${createHash('sha256').update(`{"format":1,"key":{"image":"a","task":{"gold":"du -sh /workspace","query":"q"}}}`).digest('hex')}.json`;
    await writeFile(join(dir, v1Name), JSON.stringify({ format: 1, key, stable: true, outcome: restoredAnswer, durationMs: 4 }));
    expect(await store.get(key)).toBeUndefined();
    const cache = new GoldCache(store);
    let runs = 0;
    const run = async () => (runs++, { outcome: outcome('112K\t/workspace\n'), durationMs: 1, ranIn: "new-sandboxes" as const });
    expect(await cache.get('k', run, key)).toEqual({ outcome: outcome('112K\t/workspace\n'), cached: false });
    expect(runs).toBe(2);
    // Today's format, but no word (or another word) on where it was verified.
    for (const verifiedIn of [undefined, 'pooled-sandboxes']) {
      await writeFile(store.pathOf(key), JSON.stringify({ format: 2, key, ...(verifiedIn ? { verifiedIn } : {}), stable: true, outcome: restoredAnswer }));
      expect(await store.get(key), String(verifiedIn)).toBeUndefined();
    }
  });

  it('writes no entry when a verification run was not in a new sandbox', async () => {
    const dir = await tempDir();
    const cache = new GoldCache(bashGoldStore(dir));
    let runs = 0;
    const run = async () => ({ outcome: outcome('x'), durationMs: 1, ...(runs++ === 0 ? { ranIn: "new-sandboxes" as const } : {}) });
    expect(await cache.get('k', run, { gold: 'ls' })).toEqual({ outcome: outcome('x'), cached: false });
    expect(await readdir(dir).catch(() => [])).toEqual([]);
  });

  it('loses only the saving when the folder cannot be written', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'file'), 'not a folder');
    const store = new GoldStore(join(dir, 'file', 'golds'), { encode: (x: string) => x, decode: (x) => (typeof x === 'string' ? x : undefined) });
    expect(await store.put({ gold: 'ls' }, { stable: true, outcome: 'x', verifiedIn: 'new-sandboxes' })).toBe(false);
    expect(await store.get({ gold: 'ls' })).toBeUndefined();
  });

  it('defaults to $INTERCODE_GOLD_CACHE, else the XDG cache folder', () => {
    expect(defaultGoldCacheDir({ INTERCODE_GOLD_CACHE: '/x/golds' })).toBe('/x/golds');
    expect(defaultGoldCacheDir({ XDG_CACHE_HOME: '/c' })).toBe('/c/intercode-ts/golds');
  });
});

describe('GoldCache over a GoldStore', () => {
  it('verifies a gold with two runs once; a later process (a new cache on the same folder) runs nothing', async () => {
    const dir = await tempDir();
    let runs = 0;
    const run = async () => {
      runs += 1;
      return { outcome: outcome('same\n'), durationMs: 5, ranIn: "new-sandboxes" as const };
    };
    const first = new GoldCache(bashGoldStore(dir));
    expect(await first.get('k', run, { gold: 'ls' })).toEqual({ outcome: outcome('same\n'), cached: false });
    expect(runs).toBe(2);
    expect(await first.get('k', run, { gold: 'ls' })).toMatchObject({ cached: true });
    expect(runs).toBe(2);

    const later = new GoldCache(bashGoldStore(dir));
    expect(await later.get('k', run, { gold: 'ls' })).toEqual({ outcome: outcome('same\n'), cached: true });
    expect(runs).toBe(2);
  });

  it('stores a gold whose two runs differ as non-deterministic: a later process runs it once per score, never verifies it again', async () => {
    const dir = await tempDir();
    let runs = 0;
    const run = async () => ({ outcome: outcome(`run ${++runs}\n`), durationMs: 1, ranIn: "new-sandboxes" as const });
    await new GoldCache(bashGoldStore(dir)).get('k', run, { gold: 'date' });
    expect(runs).toBe(2);
    const later = new GoldCache(bashGoldStore(dir));
    const got = await later.get('k', run, { gold: 'date' });
    expect(got).toEqual({ outcome: outcome('run 3\n'), cached: false });
    expect(later.isUnstable('k')).toBe(true);
    await later.get('k', run, { gold: 'date' });
    expect(runs).toBe(4);
  });

  it('runs the two verification runs one after the other, never both at once (a shared pool cannot deadlock)', async () => {
    let running = 0;
    let most = 0;
    const run = async () => {
      most = Math.max(most, ++running);
      await new Promise((r) => setTimeout(r, 5));
      running -= 1;
      return { outcome: outcome('x'), durationMs: 5, ranIn: "new-sandboxes" as const };
    };
    await new GoldCache().get('k', run);
    expect(most).toBe(1);
  });

  it('keeps how long the longer verification run took, stable or not; a later process reads it from the store (then runs nothing to score)', async () => {
    const dir = await tempDir();
    const durations = [30, 70, 4, 9];
    let runs = 0;
    const run = (text: (n: number) => string) => async () => ({ outcome: outcome(text(runs)), durationMs: durations[runs++]!, ranIn: "new-sandboxes" as const });
    const first = new GoldCache(bashGoldStore(dir));
    await first.get('walk', run(() => 'same\n'), { gold: 'find /' });
    await first.get('date', run((n) => `run ${n}\n`), { gold: 'date' });
    expect(await first.durationMs('walk', { gold: 'find /' })).toBe(70);
    expect(await first.durationMs('date', { gold: 'date' })).toBe(9);
    expect(await first.durationMs('never', { gold: 'ls' })).toBeUndefined();

    const later = new GoldCache(bashGoldStore(dir));
    expect(await later.durationMs('walk', { gold: 'find /' })).toBe(70);
    expect(await later.durationMs('date', { gold: 'date' })).toBe(9);
    expect(later.isUnstable('date')).toBe(true);
    const scored = await later.get('walk', run(() => 'other\n'), { gold: 'find /' });
    expect(scored).toEqual({ outcome: outcome('same\n'), cached: true });
    expect(runs).toBe(4);
  });

  it('an entry written before durations were kept still serves its outcome, with no duration', async () => {
    const dir = await tempDir();
    const store = bashGoldStore(dir);
    await store.put({ gold: 'ls' }, { stable: true, outcome: outcome('old\n'), verifiedIn: 'new-sandboxes' });
    const cache = new GoldCache(store);
    expect(await cache.durationMs('k', { gold: 'ls' })).toBeUndefined();
    expect(await cache.get('k', async () => ({ outcome: outcome('new\n'), durationMs: 1, ranIn: "new-sandboxes" as const }), { gold: 'ls' })).toEqual({ outcome: outcome('old\n'), cached: true });
  });
});

describe('BashEnv.goldKey: a changed input invalidates exactly the entries it affects', () => {
  const tasks: Task[] = [
    { index: 0, id: '0', query: 'list the testbed', gold: 'ls /testbed', metadata: {} },
    { index: 1, id: '1', query: 'count files', gold: 'find /testbed -type f | wc -l', metadata: {} },
    { index: 2, id: '2', query: 'make a file', gold: ['touch /testbed/a', 'ls /testbed'], metadata: {} },
  ];
  const base: BashEnvConfig = {
    runtime: { name: 'docker', systemView: dockerSystemView(undefined) } as SandboxRuntime,
    spec: { image: 'intercode-ts/bash-testbed:0123456789abcdef', hostname: 'intercode', limits: DEFAULT_LIMITS, capabilities: DEFAULT_CAPABILITIES },
    dataset: tasks,
    execMode: 'session',
    hashMode: 'intercode',
    goldCache: false,
    imageId: 'sha256:aaaa',
  };
  const keys = (config: BashEnvConfig) => {
    const env = new BashEnv(config);
    return env.tasks.map((t) => env.goldKey(t));
  };

  /** Stores every task's gold under `before`, then says which tasks still hit under `after`. */
  async function hitsAfter(after: BashEnvConfig): Promise<boolean[]> {
    const store = bashGoldStore(await tempDir());
    for (const key of keys(base)) await store.put(key, { stable: true, outcome: outcome('x'), verifiedIn: 'new-sandboxes' });
    return Promise.all(keys(after).map(async (key) => (await store.get(key)) !== undefined));
  }

  it('keeps every entry when nothing changed, or only what the key leaves out changed (--eval-obs, seed)', async () => {
    expect(await hitsAfter({ ...base })).toEqual([true, true, true]);
    expect(await hitsAfter({ ...base, comparedGoldOutput: 'tail', seed: 3 })).toEqual([true, true, true]);
  });

  it("a task's query or gold: only that task's entry", async () => {
    const edited = (i: number, change: Partial<Task>) => ({ ...base, dataset: tasks.map((t) => (t.index === i ? { ...t, ...change } : t)) });
    expect(await hitsAfter(edited(1, { query: 'count the files' }))).toEqual([true, false, true]);
    expect(await hitsAfter(edited(2, { gold: ['touch /testbed/b', 'ls /testbed'] }))).toEqual([true, true, false]);
    expect(await hitsAfter(edited(0, { metadata: { setup: 'x' } }))).toEqual([false, true, true]);
  });

  it('the image (tag: testbed and build inputs; id: a rebuild), exec mode, its shell, the time limit, limits, hash mode: every entry', async () => {
    const all = [false, false, false];
    expect(await hitsAfter({ ...base, spec: { ...base.spec, image: 'intercode-ts/bash-testbed:fedcba9876543210' } })).toEqual(all);
    expect(await hitsAfter({ ...base, imageId: 'sha256:bbbb' })).toEqual(all);
    expect(await hitsAfter({ ...base, execMode: 'intercode' })).toEqual(all);
    expect(await hitsAfter({ ...base, execMode: 'intercode', intercodeShell: '/bin/sh' })).toEqual(all);
    expect(await hitsAfter({ ...base, shell: { timeoutMs: 5_000 } })).toEqual(all);
    expect(await hitsAfter({ ...base, spec: { ...base.spec, limits: { ...DEFAULT_LIMITS, memoryBytes: 1 } } })).toEqual(all);
    expect(await hitsAfter({ ...base, hashMode: 'strict' })).toEqual(all);
  });

  it('what the runtime shows of /proc and /sys (its OCI runtime, the paths it masks): every entry', async () => {
    const all = [false, false, false];
    expect(await hitsAfter({ ...base, runtime: { name: 'docker', systemView: dockerSystemView('runsc') } as SandboxRuntime })).toEqual(all);
    expect(await hitsAfter({ ...base, runtime: { name: 'kubernetes', systemView: 'kubernetes/default' } as SandboxRuntime })).toEqual(all);
    expect(dockerSystemView(undefined)).not.toBe(dockerSystemView('runc'));
  });

  it('writes one file per task, holding its key in the clear', async () => {
    const dir = await tempDir();
    const store = bashGoldStore(dir);
    for (const key of keys(base)) await store.put(key, { stable: true, outcome: outcome('x'), verifiedIn: 'new-sandboxes' });
    const files = await readdir(dir);
    expect(files).toHaveLength(3);
    const entry = JSON.parse(await readFile(join(dir, files[0]!), 'utf8')) as { key: { image: string } };
    expect(entry.key.image).toBe(base.spec.image);
  });
});
