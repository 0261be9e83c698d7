/**
 * bench vs-intercode without running anything heavy: its help, a bad option, the clear exit
 * when the shared baselines are absent, and how rewards are compared with InterCode's passes.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { compareRewards, sharedDir, vsIntercodeBench } from '../../bench/vs-intercode.js';
import { makeTempDir } from '../datasets/tmp-files.js';
import { capturedBenchIO } from '../setup/bench-io.js';

const saved = process.env.INTERCODE_SHARED;
afterEach(() => {
  if (saved === undefined) delete process.env.INTERCODE_SHARED;
  else process.env.INTERCODE_SHARED = saved;
});

describe('bench vs-intercode', () => {
  it('prints its usage with --help and names an unknown option', async () => {
    const help = capturedBenchIO();
    expect(await vsIntercodeBench.run(['--help'], help.io)).toBe(0);
    expect(help.out()).toMatch(/--parallel 1 and 8/);
    await expect(vsIntercodeBench.run(['--envs', '3'], capturedBenchIO().io)).rejects.toThrow(/--envs is not an option of the vs-intercode bench/);
  });

  it('takes --env bash, sql or python; --exec is bash\'s alone', async () => {
    const help = capturedBenchIO();
    expect(await vsIntercodeBench.run(['--help'], help.io)).toBe(0);
    expect(help.out()).toMatch(/--env ENV +bash \(default\), sql or python/);
    const bad = capturedBenchIO();
    expect(await vsIntercodeBench.run(['--env', 'ctf'], bad.io)).toBe(2);
    expect(bad.err()).toBe('vs-intercode: --env must be bash, sql or python, got "ctf"\n');
    const exec = capturedBenchIO();
    expect(await vsIntercodeBench.run(['--env', 'sql', '--exec', 'session'], exec.io)).toBe(2);
    expect(exec.err()).toBe('vs-intercode: --exec applies to bash only\n');
  });

  it('--env sql needs the Spider dump: says so when it is absent', async () => {
    const empty = await makeTempDir();
    try {
      process.env.INTERCODE_SHARED = empty.dir;
      await mkdir(join(empty.dir, 'baselines', 'intercode-py'), { recursive: true });
      await mkdir(join(empty.dir, 'intercode-data', 'sql', 'spider'), { recursive: true });
      await empty.write('baselines/intercode-py/bench.sh', '#!/bin/sh\nexit 1\n');
      await empty.write('intercode-data/sql/spider/ic_spider_dev.json', '[]');
      const run = capturedBenchIO();
      expect(await vsIntercodeBench.run(['--env', 'sql'], run.io)).toBe(1);
      expect(run.err()).toMatch(new RegExp(`^vs-intercode: ${empty.dir}/intercode-data/sql/spider/ic_spider_dbs.sql does not exist`));
    } finally {
      await empty.remove();
    }
  });

  it('exits 1 saying what is missing when the shared baselines are absent', async () => {
    const empty = await makeTempDir();
    try {
      process.env.INTERCODE_SHARED = empty.dir;
      expect(sharedDir()).toBe(empty.dir);
      const run = capturedBenchIO();
      expect(await vsIntercodeBench.run(['--tasks', '2'], run.io)).toBe(1);
      expect(run.err()).toBe(
        `vs-intercode: ${empty.dir}/baselines/intercode-py/bench.sh does not exist; this bench needs baselines/intercode-py and intercode-data in ../shared next to the checkout (or $INTERCODE_SHARED)\n`,
      );
      expect(run.out()).toBe('');
    } finally {
      await empty.remove();
    }
  });

  it('counts a reward as InterCode\'s when InterCode gave it in any pass', () => {
    const below1 = [{ pass: 1, index: 30, reward: 0.67 }];
    const ours = new Map([
      [11, [1, 0.67]],
      [30, [1, 0.67]],
      [31, [1, 1]],
    ]);
    expect(compareRewards(below1, 2, ours)).toEqual([{ index: 11, intercode: [1, 1], ours: [1, 0.67] }]);
    expect(compareRewards(below1, 1, ours).map((d) => d.index)).toEqual([11, 30]);
  });
});
