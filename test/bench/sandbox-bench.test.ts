/**
 * `bench sandbox` on the local engine: a short run prints every stage's figures for the bare
 * sandbox and the bash workspace, for the kind the engine gives; a bad option is refused
 * naming it. Speeds are not judged here (benchmarks are, never tests).
 */
import { describe, expect, it } from 'vitest';
import { sandboxBench, type SandboxBenchResult } from '../../bench/sandbox-bench.js';
import { probeEngine, skipWithoutEngine } from '../setup/docker.js';
import { capturedBenchIO } from '../setup/bench-io.js';

const engine = await probeEngine();

describe('bench sandbox', () => {
  it('refuses a kind it does not know, naming --sandbox-kind', async () => {
    const { io, err } = capturedBenchIO();
    expect(await sandboxBench.run(['--sandbox-kind', 'vm'], io)).toBe(2);
    expect(err()).toContain('--sandbox-kind');
  });

  it('--help names every stage it reports', async () => {
    const { io, out } = capturedBenchIO();
    expect(await sandboxBench.run(['--help'], io)).toBe(0);
    for (const stage of ['create', 'ready', 'destroy', 'host CPU']) expect(out()).toContain(stage);
  });

  it.skipIf(skipWithoutEngine(engine, 'bench sandbox'))('measures bare sandboxes and bash workspaces, one at a time', async () => {
    const { io, out, err } = capturedBenchIO();
    expect(await sandboxBench.run(['--count', '3', '--json'], io), err()).toBe(0);
    const result = JSON.parse(out()) as SandboxBenchResult;
    expect(['episode-roots', 'containers']).toContain(result.sandboxKind);
    for (const loop of [result.bare, result.workspace]) {
      expect(loop.count).toBe(3);
      expect(loop.createMs.p50).toBeGreaterThan(0);
      expect(loop.destroyMs.p50).toBeGreaterThan(0);
      expect(loop.thisProcessCpuMsPerSandbox).toBeGreaterThan(0);
      expect(loop.hostCpuMsPerSandbox).toBeGreaterThanOrEqual(0);
    }
    // Ready is the create and a first process after it.
    expect(result.bare.readyMs!.p50).toBeGreaterThan(result.bare.createMs.p50);
    expect(result.workspace.readyMs).toBeUndefined();
  }, 120_000);
});
