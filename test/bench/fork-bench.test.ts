/**
 * `bench fork --env sqlite` in-process (embedded SQLite, no Docker): one round per size
 * prints the figures the issue names for both sizes, and a child prints the parent's
 * observer probe (`exact`). A bad --env is refused naming it. Speeds are not judged here.
 */
import { describe, expect, it } from 'vitest';
import { forkBench, type ForkSizeResult } from '../../bench/fork-bench.js';
import { capturedBenchIO } from '../setup/bench-io.js';

describe('bench fork --env sqlite', () => {
  it('prints checkpoint, one-child, eight-children and replay p50s per size, and exact: true', async () => {
    const { io, out } = capturedBenchIO();
    expect(await forkBench.run(['--env', 'sqlite', '--rounds', '1', '--json'], io)).toBe(0);
    const result = JSON.parse(out()) as Record<string, ForkSizeResult>;
    expect(Object.keys(result)).toEqual(['1MiB', '50MiB']);
    for (const size of Object.values(result)) {
      expect(size.exact).toBe(true);
      for (const figure of [size.checkpointP50Ms, size.restoreP50Ms, size.forkOneP50Ms, size.forkEightP50Ms, size.replayP50Ms]) expect(figure).toBeGreaterThan(0);
    }
  }, 120_000);

  it('refuses an env it has no episode for, naming --env', async () => {
    const { io, err } = capturedBenchIO();
    expect(await forkBench.run(['--env', 'nope'], io)).toBe(2);
    expect(err()).toContain('--env must be bash, python, sqlite or mariadb');
  });
});
