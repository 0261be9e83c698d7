/**
 * The cost of one OCI runtime against another in the same run (e.g. gVisor's runsc against
 * runc): per runtime, one fresh sandbox is created and its shell opened (what an episode in
 * a fresh sandbox starts with), then `steps` timed `echo hi` steps after a warm-up, then it
 * is removed.
 */
import type Docker from 'dockerode';
import { DockerRuntime } from '../src/sandbox/docker/docker-runtime.js';
import { ShellSession } from '../src/sandbox/shell/shell-session.js';
import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS } from '../src/sandbox/types.js';
import { summarize } from './stats.js';

export interface RuntimeCost {
  runtime: string;
  /** The transport its shells used (`fifo`, or `attach` where FIFOs cannot be used). */
  transport: string;
  /** Creating a sandbox and opening its shell, ms. */
  startMs: number;
  stepP50Ms: number;
  stepP95Ms: number;
  /** Removing the sandbox, ms. */
  removeMs: number;
}

const WARMUP_STEPS = 100;

/** @throws whatever creating a sandbox throws (an engine without that runtime says so). */
export async function measureRuntime(docker: Docker, image: string, runtime: string, steps: number, labels: Record<string, string>): Promise<RuntimeCost> {
  const runner = new DockerRuntime(docker, { ociRuntime: runtime });
  const started = performance.now();
  const sandbox = await runner.create({ image, hostname: 'bench', limits: DEFAULT_LIMITS, capabilities: DEFAULT_CAPABILITIES, labels });
  try {
    const shell = await ShellSession.open(sandbox);
    const startMs = performance.now() - started;
    const step = async () => {
      const t = performance.now();
      const result = await shell.run('echo hi');
      if (result.output !== 'hi\n') throw new Error(`${runtime}: \`echo hi\` gave ${JSON.stringify(result.output.slice(0, 200))}`);
      return performance.now() - t;
    };
    for (let i = 0; i < WARMUP_STEPS; i++) await step();
    const samples: number[] = [];
    for (let i = 0; i < steps; i++) samples.push(await step());
    shell.close();
    const summary = summarize(samples);
    const removing = performance.now();
    await sandbox.destroy();
    return { runtime, transport: runner.activeTransport, startMs, stepP50Ms: summary.p50, stepP95Ms: summary.p95, removeMs: performance.now() - removing };
  } finally {
    await sandbox.destroy().catch(() => undefined);
  }
}

/** Each runtime measured in turn, then again in reverse order (the two means cancel drift of a loaded host). */
export async function compareRuntimes(
  docker: Docker,
  image: string,
  runtimes: readonly string[],
  steps: number,
  labels: Record<string, string>,
  log: (line: string) => void,
): Promise<RuntimeCost[]> {
  const runs = new Map<string, RuntimeCost[]>();
  for (const runtime of [...runtimes, ...[...runtimes].reverse()]) {
    const cost = await measureRuntime(docker, image, runtime, steps, labels);
    log(`  ${runtime} (${cost.transport}): start ${cost.startMs.toFixed(0)} ms, step p50 ${cost.stepP50Ms.toFixed(3)} ms, p95 ${cost.stepP95Ms.toFixed(3)} ms, remove ${cost.removeMs.toFixed(0)} ms`);
    runs.set(runtime, [...(runs.get(runtime) ?? []), cost]);
  }
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
  return runtimes.map((runtime) => {
    const costs = runs.get(runtime)!;
    return {
      runtime,
      transport: costs[0]!.transport,
      startMs: mean(costs.map((c) => c.startMs)),
      stepP50Ms: mean(costs.map((c) => c.stepP50Ms)),
      stepP95Ms: mean(costs.map((c) => c.stepP95Ms)),
      removeMs: mean(costs.map((c) => c.removeMs)),
    };
  });
}
