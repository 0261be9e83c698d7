import { describe, expect, it } from 'vitest';
import { vecResult, type VecRow } from '../../bench/vec-bench.js';
import { DEFAULT_VEC_OPTIONS, parseVecOptions, type VecBenchOptions } from '../../bench/vec-options.js';
import { ConfigError } from '../../src/errors.js';

describe('vec bench options', () => {
  it('defaults to 1,4,16,64 envs × 0,1,2 workers, and parses lists (sorted, deduplicated)', () => {
    expect(parseVecOptions([])).toEqual(DEFAULT_VEC_OPTIONS);
    expect(parseVecOptions(['--envs', '16,4,4', '--workers', '2,0', '--duration', '0.5', '--json'])).toEqual({ envs: [4, 16], workers: [0, 2], durationSec: 0.5, json: true, engine: 'docker', clean: 'restore' });
    expect(parseVecOptions(['--engine', 'k8s:ctx/ns', '--clean', 'replace'])).toMatchObject({ engine: 'k8s:ctx/ns', clean: 'replace' });
    expect(parseVecOptions(['--help'])).toBe('help');
  });

  it('--threads/--env ask for the thread comparison only: one env count (the largest), threads 1,2 by default', () => {
    expect((parseVecOptions(['--env', 'sqlite', '--duration', '2']) as VecBenchOptions).threadComparison).toEqual({ env: 'sqlite', threads: [1, 2], envs: 8, durationSec: 2, rounds: 1 });
    expect((parseVecOptions(['--threads', '4,1,2', '--envs', '4,16', '--rounds', '3']) as VecBenchOptions).threadComparison).toEqual({ env: 'bash', threads: [1, 2, 4], envs: 16, durationSec: 5, rounds: 3 });
    expect(() => parseVecOptions(['--env', 'mysql'])).toThrow(/--env/);
    expect(() => parseVecOptions(['--threads', '0'])).toThrow(/--threads/);
    expect(() => parseVecOptions(['--rounds', '2'])).toThrow(/--rounds/);
  });

  it('names the bad option', () => {
    expect(() => parseVecOptions(['--envs', '0'])).toThrow(/--envs/);
    expect(() => parseVecOptions(['--workers', 'two'])).toThrow(ConfigError);
    expect(() => parseVecOptions(['--duration', '-1'])).toThrow(/--duration/);
    expect(() => parseVecOptions(['--nope'])).toThrow(/--nope/);
    expect(() => parseVecOptions(['--engine', 'tcp://x'])).toThrow(/--engine/);
    expect(() => parseVecOptions(['--clean', 'wipe'])).toThrow(/--clean/);
  });
});

describe('vec bench result', () => {
  const row = (envs: number, workers: number, trivial: number, gold: number): VecRow => ({
    envs, workers, trivialStepsPerSec: trivial, stepP50Ms: 0.1 * envs, stepP99Ms: 1, goldEpisodesPerSec: gold, resetP50Ms: envs, resetP99Ms: 2 * envs, goldBelowOne: 0, memoryPerSandboxMiB: 2,
  });

  it('puts the best rows\' figures on top and says which rows they are', () => {
    const result = vecResult([row(1, 0, 9000, 20), row(4, 1, 7000, 40), row(16, 2, 5000, 30)], 4);
    expect(result).toMatchObject({ trivialStepsPerSec: 9000, stepP50Ms: 0.1, bestTrivial: { envs: 1, workers: 0 }, goldEpisodesPerSec: 40, resetP50Ms: 4, resetP99Ms: 8, bestGold: { envs: 4, workers: 1 }, speedup: 10, sequentialGoldEpisodesPerSec: 4 });
    expect(result.table).toHaveLength(3);
  });
});
