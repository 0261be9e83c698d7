/**
 * `bench sandbox`: what one new sandbox costs, one at a time, on the local engine: a bare
 * sandbox of the bash env's spec (made, `true` run in it, removed) and a bash episode's
 * workspace as the env makes it (the sandbox with the harness's control shell and the
 * agent's shell open, at their pinned process ids). Wall times per stage and the host's CPU
 * per sandbox: every busy tick of the host over the loop and a settling time after it (a
 * root's folder is removed off the episode's path, a container's layer by the engine), less
 * the host's idle-time rate measured just before.
 */
import { cpus } from 'node:os';
import { oneOf } from '../src/errors.js';
import { createBashEnvs } from '../envs/bash/index.js';
import { EngineSet } from '../src/sandbox/backends/engine-set.js';
import { installShutdownHandlers } from '../src/sandbox/lifecycle/shutdown.js';
import { SANDBOX_KINDS, type SandboxKind, type SandboxSpec } from '../src/sandbox/types.js';
import { readHostTicks, TICKS_PER_SECOND } from './host-cpu.js';
import { parseBenchArgs, positiveNumber } from './bench-args.js';
import { summarize, type SampleSummary } from './stats.js';
import type { Bench, BenchIO } from './types.js';

const USAGE = `Usage: npm run bench -- sandbox [--sandbox-kind auto|episode-roots|containers] [--count N] [--json]

Makes N sandboxes (default 100) of the bash env's image one after another on the local
engine, then N bash workspaces (the sandbox with the harness's control shell and the agent's
shell open, as a reset gets it), and reports for each:
  create     the runtime's create (a new root or container)
  ready      create + the first process run to its end (\`true\`)
  destroy    the sandbox's removal as its caller waits for it (a root's folder goes later)
  host CPU   the host's busy CPU over the loop and 2 s after it, less its background rate
             measured over 2 s before, ÷ N (every process: this one, the engine, the helper)
  this process's CPU ÷ N (part of the above)
Quiet machine wanted: the host figure counts everything that runs.
--sandbox-kind K  auto (default: episode roots where the engine supports them), episode-roots, containers.
--json prints one object.
`;

/** The figures of one loop (milliseconds). */
export interface SandboxLoopResult {
  count: number;
  createMs: SampleSummary;
  readyMs?: SampleSummary;
  destroyMs: SampleSummary;
  hostCpuMsPerSandbox: number;
  thisProcessCpuMsPerSandbox: number;
}

export interface SandboxBenchResult {
  sandboxKind: SandboxKind;
  /** A bare sandbox: create, `true`, destroy. */
  bare: SandboxLoopResult;
  /** A bash episode's workspace: sandbox, control shell and agent shell; then removed. */
  workspace: SandboxLoopResult;
  hostCores: number;
}

const SETTLE_MS = 2_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The host's busy CPU so far (all CPUs), in ms. */
function hostBusyMs(): number {
  return (readHostTicks().busy * 1000) / TICKS_PER_SECOND;
}
function processCpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** Runs `one` `count` times, each returning its stage times; CPU as the module's comment says. */
async function loop(count: number, one: () => Promise<{ create: number; ready?: number; destroy: number }>): Promise<SandboxLoopResult> {
  const idleFrom = hostBusyMs();
  await sleep(SETTLE_MS);
  const backgroundPerMs = (hostBusyMs() - idleFrom) / SETTLE_MS;
  const [hostFrom, ownFrom, started] = [hostBusyMs(), processCpuMs(), performance.now()];
  const create: number[] = [];
  const ready: number[] = [];
  const destroy: number[] = [];
  for (let i = 0; i < count; i++) {
    const times = await one();
    create.push(times.create);
    if (times.ready !== undefined) ready.push(times.ready);
    destroy.push(times.destroy);
  }
  const ownCpu = processCpuMs() - ownFrom;
  await sleep(SETTLE_MS);
  const elapsed = performance.now() - started;
  const hostCpu = hostBusyMs() - hostFrom - backgroundPerMs * elapsed;
  const round = (value: number) => Number(value.toFixed(2));
  const rounded = (samples: number[]) => Object.fromEntries(Object.entries(summarize(samples)).map(([k, v]) => [k, round(v)])) as unknown as SampleSummary;
  return {
    count,
    createMs: rounded(create),
    ...(ready.length > 0 ? { readyMs: rounded(ready) } : {}),
    destroyMs: rounded(destroy),
    hostCpuMsPerSandbox: round(Math.max(0, hostCpu) / count),
    thisProcessCpuMsPerSandbox: round(ownCpu / count),
  };
}

async function measure(kind: SandboxKind, count: number, log: (line: string) => void): Promise<SandboxBenchResult> {
  const engines = EngineSet.local({ kind });
  const [env] = await createBashEnvs({ goldCache: false, engines }, 1);
  try {
    const factory = env!.workspaceFactory();
    // One made and removed first: the pool container (roots) or the image's first start.
    const first = await factory.create();
    const spec: SandboxSpec = first.sandbox.spec;
    await factory.destroy(first);
    const runtime = await engines.runtime();
    const sandboxKind: SandboxKind = runtime.freshRoots ? 'episode-roots' : 'containers';
    log(`${count} bare ${sandboxKind} sandboxes, one at a time`);
    const bare = await loop(count, async () => {
      const t0 = performance.now();
      const sandbox = await runtime.create(spec);
      const t1 = performance.now();
      try {
        const result = await sandbox.exec(['true']);
        if (result.exitCode !== 0) throw new Error(`\`true\` exited with ${result.exitCode}: ${result.output.toString().slice(0, 200)}`);
      } catch (error) {
        await sandbox.destroy().catch(() => undefined);
        throw error;
      }
      const t2 = performance.now();
      await sandbox.destroy();
      return { create: t1 - t0, ready: t2 - t0, destroy: performance.now() - t2 };
    });
    log(`${count} bash workspaces (control and agent shells open), one at a time`);
    const workspace = await loop(count, async () => {
      const t0 = performance.now();
      const made = await factory.create();
      const t1 = performance.now();
      await factory.destroy(made);
      return { create: t1 - t0, destroy: performance.now() - t1 };
    });
    return { sandboxKind, bare, workspace, hostCores: cpus().length };
  } finally {
    await env!.close();
  }
}

function formatLoop(name: string, r: SandboxLoopResult): string {
  const p = (s: SampleSummary) => `p50 ${s.p50} / p95 ${s.p95} / p99 ${s.p99} ms`;
  return [
    `${name} (${r.count}, one at a time):`,
    `  create   ${p(r.createMs)}`,
    ...(r.readyMs ? [`  ready    ${p(r.readyMs)}`] : []),
    `  destroy  ${p(r.destroyMs)}`,
    `  host CPU ${r.hostCpuMsPerSandbox} ms per sandbox (this process ${r.thisProcessCpuMsPerSandbox} ms)`,
  ].join('\n');
}

export const sandboxBench: Bench = {
  name: 'sandbox',
  summary: 'one new sandbox at a time (bare, and as a bash workspace with its shells): create, ready and destroy p50/p95/p99, host CPU per sandbox',
  async run(args: readonly string[], io: BenchIO): Promise<number> {
    let kind: SandboxKind;
    let count: number;
    let json: boolean;
    try {
      const values = parseBenchArgs('sandbox', args, { 'sandbox-kind': { type: 'string' }, count: { type: 'string' } });
      if (values === 'help') {
        io.stdout.write(USAGE);
        return 0;
      }
      kind = values['sandbox-kind'] === undefined ? 'auto' : oneOf('--sandbox-kind', String(values['sandbox-kind']), SANDBOX_KINDS);
      count = positiveNumber('--count', values.count, 100, true);
      json = values.json === true;
    } catch (error) {
      io.stderr.write(`bench sandbox: ${(error as Error).message}\n\n${USAGE}`);
      return 2;
    }
    const uninstall = installShutdownHandlers();
    try {
      const result = await measure(kind, count, (line) => io.stderr.write(`[sandbox] ${line}\n`)).catch((error: unknown) => {
        io.stderr.write(`bench sandbox: ${(error as Error).message}\n`);
        return undefined;
      });
      if (!result) return 1;
      io.stdout.write(json ? `${JSON.stringify(result)}\n` : `${result.sandboxKind}, ${result.hostCores} cores\n${formatLoop('bare sandbox', result.bare)}\n${formatLoop('bash workspace', result.workspace)}\n`);
      return 0;
    } finally {
      uninstall();
    }
  },
};
