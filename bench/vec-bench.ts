/**
 * The vec bench: what N bash envs sustain together as one VecEnv over a warm pool, with
 * and without worker threads for rewards, against one plain env alone. Options and
 * method: {@link VEC_USAGE}.
 */
import type Docker from 'dockerode';
import { createBashEnvs, GoldCache, type BashEnv } from '../envs/bash/index.js';
import { goldText } from '../src/datasets/index.js';
import { thisRunFilter } from '../src/sandbox/docker/labels.js';
import { EngineSet } from '../src/sandbox/backends/engine-set.js';
import type { SandboxKind, SandboxSettings } from '../src/sandbox/types.js';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pooledVecEnv } from '../src/vec/make-vec-env.js';
import { VecEnv } from '../src/vec/vec-env.js';
import { closedLoop, TaskRotation } from './closed-loop.js';
import { CpuWorkers } from '../src/workers/cpu-workers.js';
import { describeMachine } from './machine.js';
import { summarize } from './stats.js';
import { formatTable } from './table.js';
import { engineBench } from './engine-bench.js';
import type { Bench, BenchIO } from './types.js';
import { parseVecOptions, VEC_USAGE, type VecBenchOptions } from './vec-options.js';
import { compareTransfer } from './transfer-compare.js';
import { compareThreads, formatThreadComparison, type ThreadComparisonResult } from './vec-threads.js';
import { installShutdownHandlers } from '../src/sandbox/lifecycle/shutdown.js';
import { describeError } from './sandbox-set.js';
import { IntercodeError } from '../src/errors.js';

/** One configuration's figures (latencies in ms). */
export interface VecRow {
  envs: number;
  workers: number;
  trivialStepsPerSec: number;
  stepP50Ms: number;
  stepP99Ms: number;
  goldEpisodesPerSec: number;
  resetP50Ms: number;
  resetP99Ms: number;
  /** Gold episodes that scored below 1 (a broken restore would show here). */
  goldBelowOne: number;
  memoryPerSandboxMiB: number;
}

/** The `--json` output: the best configurations' figures on top, every row in `table`. */
export interface VecBenchResult {
  trivialStepsPerSec: number;
  goldEpisodesPerSec: number;
  sequentialGoldEpisodesPerSec: number;
  /** goldEpisodesPerSec / sequentialGoldEpisodesPerSec. */
  speedup: number;
  resetP50Ms: number;
  resetP99Ms: number;
  stepP50Ms: number;
  stepP99Ms: number;
  memoryPerSandboxMiB: number;
  /** The row the step figures come from (most trivial steps/s). */
  bestTrivial: { envs: number; workers: number };
  /** The row the episode, reset and memory figures come from (most gold episodes/s). */
  bestGold: { envs: number; workers: number };
  table: VecRow[];
  /** With --runtimes: each runtime's headline figures, measured in this run. */
  runtimes?: { runtime: string; trivialStepsPerSec: number; goldEpisodesPerSec: number; stepP50Ms: number; resetP50Ms: number }[];
}

const WARMUP_MS = 1_000;

/** @throws when nothing finished inside the window (summaries need samples). */
function counted(samples: number[], durationMs: number): number[] {
  if (samples.length === 0) throw new Error(`nothing finished within the ${durationMs / 1000} s counted; give a longer --duration`);
  return samples;
}
const TRIVIAL = 'echo hi';
const round = (value: number, digits = 2) => Number(value.toFixed(digits));

/** A measuring window: things that end inside it count. */
class Window {
  readonly start = performance.now() + WARMUP_MS;
  constructor(readonly durationMs: number) {}
  get end(): number {
    return this.start + this.durationMs;
  }
  counts(at: number): boolean {
    return at >= this.start && at < this.end;
  }
  get over(): boolean {
    return performance.now() >= this.end;
  }
}

async function trivialPhase(envs: readonly BashEnv[], durationMs: number): Promise<Pick<VecRow, 'trivialStepsPerSec' | 'stepP50Ms' | 'stepP99Ms'>> {
  const vec = new VecEnv(envs, { autoreset: 'disabled' });
  await vec.reset();
  const latencies: number[] = [];
  const window = new Window(durationMs);
  await closedLoop(vec, () => !window.over, () => TRIVIAL, (step, latency, ended) => {
    if (step.observation !== 'hi\n') throw new Error(`\`${TRIVIAL}\` gave ${JSON.stringify(step.observation.slice(0, 200))}`);
    if (window.counts(ended)) latencies.push(latency);
    return TRIVIAL;
  });
  const stats = summarize(counted(latencies, durationMs));
  return { trivialStepsPerSec: latencies.length / (durationMs / 1000), stepP50Ms: stats.p50, stepP99Ms: stats.p99 };
}


/** Gold episodes in next-step autoreset: the step after a submit is the reset (its latency is the reset's). */
async function goldPhase(envs: readonly BashEnv[], durationMs: number): Promise<Pick<VecRow, 'goldEpisodesPerSec' | 'resetP50Ms' | 'resetP99Ms' | 'goldBelowOne'>> {
  const tasks = envs[0]!.tasks;
  const rotation = new TaskRotation(tasks);
  const vec = new VecEnv(envs, {
    autoreset: 'next-step',
    nextTask: rotation.nextTask,
  });
  await vec.reset();
  const resets: number[] = [];
  let episodes = 0;
  let belowOne = 0;
  const window = new Window(durationMs);
  await closedLoop(vec, () => !window.over, (envId) => goldText(rotation.of(envId)), (step, latency, ended) => {
    if (step.info.truncation) throw new Error(`env ${step.envId}: the sandbox was lost: ${step.info.truncation.message}`);
    if (step.info.autoreset) {
      if (window.counts(ended)) resets.push(latency);
      return goldText(rotation.of(step.envId));
    }
    if (!step.terminated) return 'submit';
    if (window.counts(ended)) {
      episodes += 1;
      if (step.reward < 1) belowOne += 1;
    }
    return 'reset';
  });
  const stats = summarize(counted(resets, durationMs));
  return { goldEpisodesPerSec: episodes / (durationMs / 1000), resetP50Ms: stats.p50, resetP99Ms: stats.p99, goldBelowOne: belowOne };
}

/** One env alone, no pool: a new sandbox per reset (the plain env's default). */
async function sequentialPhase(goldCache: GoldCache, engines: EngineSet, durationMs: number): Promise<number> {
  const [env] = await createBashEnvs({ goldCache, engines }, 1);
  try {
    const tasks = env!.tasks;
    const window = new Window(durationMs);
    let episodes = 0;
    for (let i = 0; !window.over; i++) {
      const task = tasks[i % tasks.length]!;
      await env!.reset({ task });
      await env!.step(goldText(task));
      await env!.step('submit');
      if (window.counts(performance.now())) episodes += 1;
    }
    return episodes / (durationMs / 1000);
  } finally {
    await env!.close();
  }
}

/** Mean of the engine's memory figure (usage minus page cache) over this run's sandboxes. */
async function memoryPerSandboxMiB(docker: Docker, kind: SandboxKind | undefined): Promise<number> {
  if (kind === 'episode-roots') return memoryPerRootMiB(docker);
  const containers = await docker.listContainers({ filters: thisRunFilter() });
  const usage = await Promise.all(
    containers.map(async ({ Id }) => {
      const stats = (await docker.getContainer(Id).stats({ stream: false, 'one-shot': true } as { stream: false })) as unknown as {
        memory_stats?: { usage?: number; stats?: { cache?: number; inactive_file?: number } };
      };
      const memory = stats.memory_stats ?? {};
      return (memory.usage ?? 0) - (memory.stats?.cache ?? memory.stats?.inactive_file ?? 0);
    }),
  );
  return mean(usage);
}

/**
 * The same figure for episode roots, read from their cgroups: each root is a sibling
 * `docker/<id>` of the engine's containers in cgroup v1's memory hierarchy, so every group
 * there that no container of the engine owns is a root's.
 */
async function memoryPerRootMiB(docker: Docker): Promise<number> {
  const base = '/sys/fs/cgroup/memory/docker';
  const containers = new Set((await docker.listContainers({ all: true })).map(({ Id }) => Id));
  const roots = readdirSync(base, { withFileTypes: true }).filter((entry) => entry.isDirectory() && /^[0-9a-f]{64}$/.test(entry.name) && !containers.has(entry.name));
  const usage = roots.flatMap(({ name }) => {
    try {
      const used = Number(readFileSync(join(base, name, 'memory.usage_in_bytes'), 'utf8'));
      const cache = Number(/^total_cache (\d+)$/m.exec(readFileSync(join(base, name, 'memory.stat'), 'utf8'))?.[1] ?? 0);
      return [used - cache];
    } catch {
      return []; // a root removed meanwhile
    }
  });
  return mean(usage);
}

const mean = (bytes: readonly number[]) => (bytes.length ? bytes.reduce((a, b) => a + b, 0) / bytes.length / 2 ** 20 : 0);

async function measure(docker: Docker, options: VecBenchOptions, log: (line: string) => void, sandboxes: SandboxSettings): Promise<{ rows: VecRow[]; sequential: number }> {
  const machine = await describeMachine(docker);
  log(`engine: Docker ${machine.dockerServerVersion}; host: ${machine.hostCores} cores; load ${machine.loadAverage1m.toFixed(2)}`);
  const goldCache = new GoldCache();
  const engines = options.engine === 'docker' ? EngineSet.local(sandboxes) : new EngineSet([{ endpoint: options.engine, weight: 1 }], { sandboxes });
  log(`sandboxes: ${options.engine === 'docker' ? `local Docker engine, ${sandboxes.kind ?? 'containers'}` : `Kubernetes (${options.engine})`}, clean: ${options.clean}`);
  try {
    return await measureOn(engines, goldCache, options, log, docker);
  } finally {
    engines.close();
  }
}

async function measureOn(engines: EngineSet, goldCache: GoldCache, options: VecBenchOptions, log: (line: string) => void, docker: Docker): Promise<{ rows: VecRow[]; sequential: number }> {
  const durationMs = options.durationSec * 1000;
  log('gold outcomes: running every task\'s gold once (cached for the rest of the run)');
  const [warm] = await createBashEnvs({ goldCache, engines }, 1);
  for (const task of warm!.tasks) {
    await warm!.reset({ task });
    await warm!.step(goldText(task));
    await warm!.step('submit');
  }
  await warm!.close();
  log('sequential: one env, a new sandbox per reset');
  const sequential = await sequentialPhase(goldCache, engines, durationMs);
  log(`  ${sequential.toFixed(1)} gold episodes/s`);
  const rows: VecRow[] = [];
  for (const n of options.envs) {
    log(`${n} env(s): creating the pool`);
    const envs = await createBashEnvs({ goldCache, engines }, n);
    const { vec, pool } = pooledVecEnv(envs, { autoreset: 'disabled', clean: options.clean });
    try {
      await pool.ready();
      // Pods are not this run's labelled containers: their memory is not read here.
      const memory = options.engine === 'docker' ? await memoryPerSandboxMiB(docker, options.sandboxKind) : Number.NaN;
      // Untimed: the first episodes of a new pool queue behind its first restores, which
      // would be charged to whichever worker count came first.
      log(`  warm-up: ${options.durationSec} s of gold episodes, not counted`);
      await goldPhase(envs, durationMs);
      for (const threads of options.workers) {
        const workers = new CpuWorkers(threads);
        for (const env of envs) env.useCpuWorkers(workers);
        try {
          const trivial = await trivialPhase(envs, durationMs);
          const gold = await goldPhase(envs, durationMs);
          const row: VecRow = { envs: n, workers: threads, ...trivial, ...gold, memoryPerSandboxMiB: memory };
          rows.push(row);
          log(`  workers ${threads}: ${Math.round(row.trivialStepsPerSec)} steps/s, ${row.goldEpisodesPerSec.toFixed(1)} gold episodes/s, reset p50 ${row.resetP50Ms.toFixed(2)} ms; pool ${JSON.stringify(pool.stats())}`);
        } finally {
          await workers.close();
        }
      }
    } finally {
      await vec.close();
    }
  }
  return { rows, sequential };
}

export function vecResult(rows: readonly VecRow[], sequential: number): VecBenchResult {
  const best = (key: 'trivialStepsPerSec' | 'goldEpisodesPerSec') => rows.reduce((a, b) => (b[key] > a[key] ? b : a));
  const trivial = best('trivialStepsPerSec');
  const gold = best('goldEpisodesPerSec');
  return {
    trivialStepsPerSec: round(trivial.trivialStepsPerSec, 1),
    goldEpisodesPerSec: round(gold.goldEpisodesPerSec, 1),
    sequentialGoldEpisodesPerSec: round(sequential, 2),
    speedup: round(gold.goldEpisodesPerSec / sequential, 1),
    resetP50Ms: round(gold.resetP50Ms, 3),
    resetP99Ms: round(gold.resetP99Ms, 3),
    stepP50Ms: round(trivial.stepP50Ms, 3),
    stepP99Ms: round(trivial.stepP99Ms, 3),
    memoryPerSandboxMiB: round(gold.memoryPerSandboxMiB, 1),
    bestTrivial: { envs: trivial.envs, workers: trivial.workers },
    bestGold: { envs: gold.envs, workers: gold.workers },
    table: rows.map((row) => ({
      ...row,
      trivialStepsPerSec: round(row.trivialStepsPerSec, 1),
      stepP50Ms: round(row.stepP50Ms, 3),
      stepP99Ms: round(row.stepP99Ms, 3),
      goldEpisodesPerSec: round(row.goldEpisodesPerSec, 1),
      resetP50Ms: round(row.resetP50Ms, 3),
      resetP99Ms: round(row.resetP99Ms, 3),
      memoryPerSandboxMiB: round(row.memoryPerSandboxMiB, 1),
    })),
  };
}

export function formatVecReport(result: VecBenchResult): string {
  const header = ['envs', 'workers', 'trivial steps/s', 'step p50 ms', 'step p99 ms', 'gold eps/s', 'reset p50 ms', 'reset p99 ms', 'gold < 1', 'MiB/sandbox'];
  const rows = result.table.map((r) => [r.envs, r.workers, r.trivialStepsPerSec, r.stepP50Ms, r.stepP99Ms, r.goldEpisodesPerSec, r.resetP50Ms, r.resetP99Ms, r.goldBelowOne, r.memoryPerSandboxMiB].map(String));
  return [
    'vec bench: bash envs as one VecEnv over a warm pool (restore in place), built-in tasks',
    '',
    ...formatTable(header, rows),
    '',
    `sequential (one env, a new sandbox per reset): ${result.sequentialGoldEpisodesPerSec} gold episodes/s`,
    `best gold: ${result.goldEpisodesPerSec} episodes/s with ${result.bestGold.envs} envs, ${result.bestGold.workers} workers (${result.speedup}× sequential)`,
    `best trivial: ${result.trivialStepsPerSec} steps/s with ${result.bestTrivial.envs} envs, ${result.bestTrivial.workers} workers`,
    ...(result.runtimes
      ? ['', 'OCI runtimes, same run (best rows):', ...result.runtimes.map((r) => `  ${r.runtime}: ${r.trivialStepsPerSec} steps/s (p50 ${r.stepP50Ms} ms), ${r.goldEpisodesPerSec} gold episodes/s (reset p50 ${r.resetP50Ms} ms)`)]
      : []),
    '',
  ].join('\n');
}

const engineVecBench: Bench = engineBench({
  name: 'vec',
  summary: 'N bash envs as one VecEnv over a warm pool: trivial steps/s, gold episodes/s, reset/step latency, memory; workers 0/1/2; --threads: envs in worker threads',
  usage: VEC_USAGE,
  parse: parseVecOptions,
  measure: async (docker, options, log) => {
    if (!options.runtimes) {
      const { rows, sequential } = await measure(docker, options, log, options.sandboxKind ? { kind: options.sandboxKind } : {});
      return vecResult(rows, sequential);
    }
    const results: { runtime: string; result: VecBenchResult }[] = [];
    for (const runtime of options.runtimes) {
      log(`runtime ${runtime}`);
      // Every sandbox and pool of this measurement is made under `runtime` (see SandboxSettings).
      const { rows, sequential } = await measure(docker, options, log, { ociRuntime: runtime, ...(options.sandboxKind ? { kind: options.sandboxKind } : {}) });
      results.push({ runtime, result: vecResult(rows, sequential) });
    }
    return {
      ...results[0]!.result,
      runtimes: results.map(({ runtime, result }) => ({
        runtime,
        trivialStepsPerSec: result.trivialStepsPerSec,
        goldEpisodesPerSec: result.goldEpisodesPerSec,
        stepP50Ms: result.stepP50Ms,
        resetP50Ms: result.resetP50Ms,
      })),
    };
  },
  format: formatVecReport,
});

/**
 * The thread comparison (`--threads`, `--env`): needs no engine for SQLite, so it does not
 * connect to one first (bash's envs connect as they are made).
 */
async function runThreadComparison(options: VecBenchOptions, io: BenchIO): Promise<number> {
  const log = (line: string) => void io.stderr.write(`vec: ${line}\n`);
  const uninstall = installShutdownHandlers({ log });
  try {
    const result: ThreadComparisonResult = await compareThreads(options.threadComparison!, log);
    io.stdout.write(options.json ? `${JSON.stringify(result)}\n` : formatThreadComparison(result));
    return 0;
  } catch (error) {
    const code = error instanceof IntercodeError ? ` [${error.code}]` : '';
    io.stderr.write(`bench vec: ${describeError(error)}${code}\n`);
    return 1;
  } finally {
    uninstall();
  }
}

export const vecBench: Bench = {
  name: 'vec',
  summary: engineVecBench.summary,
  async run(args: readonly string[], io: BenchIO): Promise<number> {
    let options: VecBenchOptions | 'help' | undefined;
    try {
      options = parseVecOptions(args);
    } catch {
      options = undefined; // engineVecBench reports the bad option
    }
    if (options !== undefined && options !== 'help' && options.transferRounds !== undefined) {
      const result = await compareTransfer(options.transferRounds, options.durationSec);
      io.stdout.write(options.json ? `${JSON.stringify(result)}\n` : `${JSON.stringify(result, null, 2)}\n`);
      return 0;
    }
    if (options !== undefined && options !== 'help' && options.threadComparison) return runThreadComparison(options, io);
    return engineVecBench.run(args, io);
  },
};
