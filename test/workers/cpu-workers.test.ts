import { existsSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { BASH_REWARD, type BashOutcome } from '../../envs/bash/reward.js';
import { ConfigError } from '../../src/errors.js';
import { packagePath } from '../../src/package-path.js';
import { CpuWorkers, INLINE } from '../../src/workers/cpu-workers.js';

const gold: BashOutcome = {
  observation: 'a.txt\nb.txt\n',
  changes: [['testbed/out.txt', '??']],
  hashes: new Map([['testbed/out.txt', 'd41d8cd98f00b204e9800998ecf8427e  /testbed/out.txt\n']]),
};
const agent: BashOutcome = {
  observation: 'a.txt\n',
  changes: [['testbed/out.txt', '??'], ['tmp/x', '??']],
  hashes: new Map([['testbed/out.txt', 'd41d8cd98f00b204e9800998ecf8427e  /testbed/out.txt\n']]),
};

describe('CpuWorkers', () => {
  const compiled = existsSync(packagePath('dist', BASH_REWARD.module));
  const threads = new CpuWorkers(2);
  afterAll(() => threads.close());

  it('runs on the calling thread with 0 threads', async () => {
    const result = await INLINE.run(BASH_REWARD, { agent, gold });
    expect(result.reward).toBe(BASH_REWARD.run({ agent, gold }).reward);
    expect(INLINE.completedOnThreads).toBe(0);
  });

  it.skipIf(!compiled && !process.env.CI)('gives the same reward on worker threads (compiled code; `npm run build` first)', async () => {
    const expected = BASH_REWARD.run({ agent, gold });
    expect(expected.reward).toBeGreaterThan(0);
    expect(expected.reward).toBeLessThan(1);
    const results = await Promise.all(Array.from({ length: 8 }, () => threads.run(BASH_REWARD, { agent, gold })));
    for (const result of results) expect(result).toEqual(expected);
    expect(threads.completedOnThreads).toBe(8);
  });

  it('refuses a bad thread count and names a missing compiled module', async () => {
    expect(() => new CpuWorkers(-1)).toThrow(ConfigError);
    expect(() => new CpuWorkers(1.5)).toThrow(ConfigError);
    await expect(threads.run({ ...BASH_REWARD, module: 'envs/bash/no-such-module.js' }, { agent, gold })).rejects.toThrow(/no-such-module\.js is missing; run `npm run build`/);
  });
});
