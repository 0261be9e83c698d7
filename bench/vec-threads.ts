/**
 * The vec bench's thread comparison (`--threads`): the same VecEnv workload — gold episodes
 * in next-step autoreset, every env in a closed loop — with the envs on the main thread
 * (threads 1: today's path, unchanged) and in N piscina worker threads (see
 * startThreadedEnvs), measured in one run: episodes/s, and the main thread's own CPU time
 * per episode (what caps one process when the envs are on its event loop).
 */
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { goldText } from '../src/datasets/index.js';
import type { TaskEnv } from '../src/env/types.js';
import { vecEnvFor } from '../src/vec/make-vec-env.js';
import { startThreadedEnvs } from '../src/vec/threaded-envs.js';
import { closedLoop, TaskRotation } from './closed-loop.js';
import { BENCH_SHARDS } from './vec-shards.js';

export type ThreadedBenchEnv = 'bash' | 'sqlite';

export interface ThreadComparisonOptions {
  env: ThreadedBenchEnv;
  threads: number[];
  /** Envs in the VecEnv, whatever the thread count. */
  envs: number;
  durationSec: number;
  /** Measurements per thread count, in alternating order; the median counts. */
  rounds: number;
}

/** One thread count's figures (medians over the rounds). */
export interface ThreadRow {
  episodesPerSec: number;
  mainThreadCpuMsPerEpisode: number;
  /** Gold episodes that scored below 1 (all rounds): a wrong reward would show here. */
  belowOne: number;
  /** Every round's episodes/s, in order. */
  rounds: number[];
}

export interface ThreadComparisonResult {
  env: ThreadedBenchEnv;
  envs: number;
  durationSec: number;
  hostCores: number;
  /** 1-minute load average before and after the run (other work on the host skews results). */
  loadAverage1m: { before: number; after: number };
  byThreads: Record<string, ThreadRow>;
  /** episodesPerSec of each thread count over that of threads 1 (when measured). */
  speedupOverOneThread: Record<string, number>;
}

/** CPU time (ms) of this process's main thread so far: Linux's per-thread counters, else the event loop's busy time. */
export function mainThreadCpuMs(): number {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of stat, in clock ticks (USER_HZ = 100).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return performance.eventLoopUtilization().active;
  }
}

const round = (value: number, digits = 2) => Number(value.toFixed(digits));
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** The envs of one configuration: on this thread (`threads` 1, as the commands make them today) or in worker threads. */
async function makeEnvs(env: ThreadedBenchEnv, threads: number, count: number): Promise<TaskEnv[]> {
  // Loaded as needed: a SQLite run never loads the Docker client (the many-core run carries no more than it needs).
  if (env === 'bash') {
    const [{ createBashEnvs }, { defaultEndpoint }] = await Promise.all([import('../envs/bash/index.js'), import('../src/sandbox/docker/engine.js')]);
    return threads > 1 ? startThreadedEnvs({ threads, count, factory: BENCH_SHARDS.bash, engines: [defaultEndpoint()] }) : createBashEnvs({}, count);
  }
  const { createSqlEnvs } = await import('../envs/sql/index.js');
  return threads > 1 ? startThreadedEnvs({ threads, count, factory: BENCH_SHARDS.sqlite }) : createSqlEnvs({ embedded: true }, count);
}

/** Gold episodes for `durationMs` not counted, then `durationMs` counted. */
async function measureOnce(env: ThreadedBenchEnv, threads: number, count: number, durationMs: number): Promise<{ episodesPerSec: number; cpuMsPerEpisode: number; belowOne: number }> {
  const envs = await makeEnvs(env, threads, count);
  const rotation = new TaskRotation(envs[0]!.tasks);
  const vec = vecEnvFor(envs, { autoreset: 'next-step', nextTask: rotation.nextTask });
  try {
    await vec.reset();
    // Not counted: as long as the window itself (a new pool's first episodes queue behind its first sandboxes and restores).
    const start = performance.now() + durationMs;
    const end = start + durationMs;
    let cpuAtStart: number | undefined;
    let cpuAtEnd: number | undefined;
    let episodes = 0;
    let belowOne = 0;
    await closedLoop(vec, () => performance.now() < end, (envId) => goldText(rotation.of(envId)), (step, _latency, at) => {
      if (cpuAtStart === undefined && at >= start) cpuAtStart = mainThreadCpuMs();
      if (cpuAtEnd === undefined && at >= end) cpuAtEnd = mainThreadCpuMs();
      if (step.info.truncation) throw new Error(`env ${step.envId}: truncated: ${step.info.truncation.message}`);
      if (step.info.autoreset) return goldText(rotation.of(step.envId));
      if (!step.terminated) return 'submit';
      if (at >= start && at < end) {
        episodes += 1;
        if (step.reward < 1) belowOne += 1;
      }
      return 'reset';
    });
    if (episodes === 0 || cpuAtStart === undefined) throw new Error(`no episode finished within the ${durationMs / 1000} s counted; give a longer --duration`);
    const cpu = (cpuAtEnd ?? mainThreadCpuMs()) - cpuAtStart;
    return { episodesPerSec: episodes / (durationMs / 1000), cpuMsPerEpisode: cpu / episodes, belowOne };
  } finally {
    await vec.close();
  }
}

/** Every thread count, `rounds` times in alternating order (so drift in the host's load hits each alike). */
export async function compareThreads(options: ThreadComparisonOptions, log: (line: string) => void): Promise<ThreadComparisonResult> {
  const before = loadavg()[0] ?? 0;
  log(`${options.env}: ${options.envs} envs, threads ${options.threads.join(',')}, ${options.rounds} round(s) of ${options.durationSec} s; host ${cpus().length} cores, load ${before.toFixed(2)}`);
  const samples = new Map<number, { eps: number[]; cpu: number[]; belowOne: number }>(options.threads.map((t) => [t, { eps: [], cpu: [], belowOne: 0 }]));
  for (let r = 0; r < options.rounds; r++) {
    const order = r % 2 === 0 ? options.threads : [...options.threads].reverse();
    for (const threads of order) {
      const once = await measureOnce(options.env, threads, options.envs, options.durationSec * 1000);
      const sample = samples.get(threads)!;
      sample.eps.push(once.episodesPerSec);
      sample.cpu.push(once.cpuMsPerEpisode);
      sample.belowOne += once.belowOne;
      log(`  threads ${threads}: ${once.episodesPerSec.toFixed(1)} episodes/s, main thread ${once.cpuMsPerEpisode.toFixed(3)} ms CPU per episode (load ${(loadavg()[0] ?? 0).toFixed(2)})`);
    }
  }
  const byThreads: Record<string, ThreadRow> = {};
  for (const [threads, s] of samples) {
    byThreads[String(threads)] = { episodesPerSec: round(median(s.eps), 1), mainThreadCpuMsPerEpisode: round(median(s.cpu), 3), belowOne: s.belowOne, rounds: s.eps.map((v) => round(v, 1)) };
  }
  const one = byThreads['1']?.episodesPerSec;
  const speedupOverOneThread = one ? Object.fromEntries(Object.entries(byThreads).map(([t, row]) => [t, round(row.episodesPerSec / one, 2)])) : {};
  return { env: options.env, envs: options.envs, durationSec: options.durationSec, hostCores: cpus().length, loadAverage1m: { before: round(before), after: round(loadavg()[0] ?? 0) }, byThreads, speedupOverOneThread };
}

export function formatThreadComparison(result: ThreadComparisonResult): string {
  const lines = [`vec bench, thread comparison: ${result.envs} ${result.env} envs as one VecEnv, gold episodes (next-step autoreset)`, ''];
  for (const [threads, row] of Object.entries(result.byThreads)) {
    const speedup = result.speedupOverOneThread[threads];
    lines.push(`  threads ${threads}: ${row.episodesPerSec} episodes/s${speedup !== undefined ? ` (${speedup}× threads 1)` : ''}, main thread ${row.mainThreadCpuMsPerEpisode} ms CPU/episode, below 1: ${row.belowOne}`);
  }
  lines.push('', `host: ${result.hostCores} cores, load ${result.loadAverage1m.before} → ${result.loadAverage1m.after}`, '');
  return lines.join('\n');
}
