/**
 * The serve bench: what the environment server costs against driving the same envs
 * in-process. Options and method: {@link SERVE_USAGE}.
 */
import { Worker } from 'node:worker_threads';
import { createBashEnvs, GoldCache, type BashEnv } from '../envs/bash/index.js';
import { bashPlugin } from '../envs/bash/plugin.js';
import { goldText } from '../src/datasets/index.js';
import { EnvServer, SERVER_DEFAULTS } from '../src/server/env-server.js';
import { pooledEnvSlots } from '../src/server/pooled-env-slots.js';
import { pooledVecEnv } from '../src/vec/make-vec-env.js';
import { VecEnv } from '../src/vec/vec-env.js';
import { closedLoop, TaskRotation } from './closed-loop.js';
import { engineBench } from './engine-bench.js';
import type { ClientsJob, ClientsResult } from './serve-clients.js';
import { parseServeOptions, SERVE_USAGE, type ServeBenchOptions } from './serve-options.js';
import { summarize } from './stats.js';
import { formatTable } from './table.js';

/** One mode's figures at one session count (latencies in ms). */
export interface ServeRow {
  sessions: number;
  trivialStepsPerSec: number;
  stepP50Ms: number;
  stepP99Ms: number;
  goldEpisodesPerSec: number;
  goldBelowOne: number;
}

export interface ServeBenchResult {
  sessions: number[];
  inProcess: ServeRow[];
  server: ServeRow[];
  /** server / in-process gold episodes/s, per session count. */
  throughputRatio: number[];
  /** server - in-process trivial step p50 (ms), per session count. */
  latencyOverheadMsP50: number[];
}

const WARMUP_MS = 1_000;
const TRIVIAL = 'echo hi';
const round = (value: number, digits = 3) => Number(value.toFixed(digits));
/** Spares as `intercode serve` keeps them (pooledEnvSlots' default), in both modes. */
const spares = (sessions: number) => Math.min(4, sessions);

/** @throws when nothing finished inside the window. */
function stats(samples: number[], durationMs: number) {
  if (samples.length === 0) throw new Error(`nothing finished within the ${durationMs / 1000} s counted; give a longer --duration`);
  return summarize(samples);
}

async function inProcessRow(envs: readonly BashEnv[], durationMs: number): Promise<ServeRow> {
  const { vec, pool } = pooledVecEnv(envs, { autoreset: 'disabled', pool: { minIdle: spares(envs.length) } });
  try {
    await pool.ready();
    const windowOf = () => ({ start: performance.now() + WARMUP_MS, end: performance.now() + WARMUP_MS + durationMs });
    // Trivial steps.
    await vec.reset();
    const latencies: number[] = [];
    let w = windowOf();
    await closedLoop(vec, () => performance.now() < w.end, () => TRIVIAL, (step, latency, at) => {
      if (step.observation !== 'hi\n') throw new Error(`\`${TRIVIAL}\` gave ${JSON.stringify(step.observation.slice(0, 200))}`);
      if (at >= w.start && at < w.end) latencies.push(latency);
      return TRIVIAL;
    });
    // Gold episodes, next-step autoreset: the step after a submit is the reset.
    const rotation = new TaskRotation(envs[0]!.tasks);
    const gold = new VecEnv(envs, { autoreset: 'next-step', nextTask: rotation.nextTask });
    await gold.reset();
    let episodes = 0;
    let belowOne = 0;
    const play = async (count: boolean) => {
      w = windowOf();
      await closedLoop(gold, () => performance.now() < w.end, (id) => goldText(rotation.of(id)), (step, _latency, at) => {
        if (step.info.truncation) throw new Error(`env ${step.envId}: the sandbox was lost: ${step.info.truncation.message}`);
        if (step.info.autoreset) return goldText(rotation.of(step.envId));
        if (!step.terminated) return 'submit';
        if (count && at >= w.start && at < w.end) {
          episodes += 1;
          if (step.reward < 1) belowOne += 1;
        }
        return 'reset';
      });
    };
    await play(false); // a new pool's first episodes queue behind its first restores
    await play(true);
    const s = stats(latencies, durationMs);
    return { sessions: envs.length, trivialStepsPerSec: latencies.length / (durationMs / 1000), stepP50Ms: s.p50, stepP99Ms: s.p99, goldEpisodesPerSec: episodes / (durationMs / 1000), goldBelowOne: belowOne };
  } finally {
    await vec.close();
  }
}

/** Runs the clients in a worker thread (the server's event loop serves only). */
function clients(job: ClientsJob): Promise<ClientsResult> {
  const worker = new Worker(new URL('./serve-clients.js', import.meta.url), { workerData: { serveBenchClients: job } });
  return new Promise<ClientsResult>((resolve, reject) => {
    worker.once('message', (message: { ok: true; result: ClientsResult } | { ok: false; error: string }) => (message.ok ? resolve(message.result) : reject(new Error(message.error))));
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the client worker exited (${code}) without a result`)));
  }).finally(() => void worker.terminate());
}

async function serverRow(envs: readonly BashEnv[], durationMs: number): Promise<ServeRow> {
  const slots = pooledEnvSlots('bash', envs, { spares: spares(envs.length) });
  await slots.ready();
  const server = await EnvServer.start({
    ...SERVER_DEFAULTS,
    slots,
    agentFacts: bashPlugin.agent,
    port: 0,
    metadata: { name: 'intercode-bash', description: 'serve bench', version: '0' },
    log: () => undefined,
  });
  try {
    const golds = envs[0]!.tasks.map((task, taskId) => ({ taskId, gold: goldText(task) }));
    const job = { url: server.url, sessions: envs.length, warmupMs: WARMUP_MS, durationMs, golds };
    const trivial = await clients({ ...job, phase: 'trivial' });
    await clients({ ...job, phase: 'gold' }); // uncounted, as in-process
    const gold = await clients({ ...job, phase: 'gold' });
    const s = stats(trivial.latencies, durationMs);
    return { sessions: envs.length, trivialStepsPerSec: trivial.latencies.length / (durationMs / 1000), stepP50Ms: s.p50, stepP99Ms: s.p99, goldEpisodesPerSec: gold.episodes / (durationMs / 1000), goldBelowOne: gold.belowOne };
  } finally {
    await server.close();
  }
}

async function measure(options: ServeBenchOptions, log: (line: string) => void): Promise<ServeBenchResult> {
  const durationMs = options.durationSec * 1000;
  const goldCache = new GoldCache();
  log('gold outcomes: running every task\'s gold once (cached for the rest of the run)');
  const [warm] = await createBashEnvs({ goldCache }, 1);
  for (const task of warm!.tasks) {
    await warm!.reset({ task });
    await warm!.step(goldText(task));
    await warm!.step('submit');
  }
  await warm!.close();
  const result: ServeBenchResult = { sessions: [], inProcess: [], server: [], throughputRatio: [], latencyOverheadMsP50: [] };
  for (const n of options.sessions) {
    log(`${n} session(s): in-process (VecEnv)`);
    const inProcess = await inProcessRow(await createBashEnvs({ goldCache }, n), durationMs);
    log(`  ${Math.round(inProcess.trivialStepsPerSec)} steps/s, p50 ${inProcess.stepP50Ms.toFixed(3)} ms, ${inProcess.goldEpisodesPerSec.toFixed(1)} gold episodes/s`);
    log(`${n} session(s): through the server (WebSocket)`);
    const server = await serverRow(await createBashEnvs({ goldCache }, n), durationMs);
    log(`  ${Math.round(server.trivialStepsPerSec)} steps/s, p50 ${server.stepP50Ms.toFixed(3)} ms, ${server.goldEpisodesPerSec.toFixed(1)} gold episodes/s`);
    const roundRow = (row: ServeRow): ServeRow => ({ ...row, trivialStepsPerSec: round(row.trivialStepsPerSec, 1), stepP50Ms: round(row.stepP50Ms), stepP99Ms: round(row.stepP99Ms), goldEpisodesPerSec: round(row.goldEpisodesPerSec, 2) });
    result.sessions.push(n);
    result.inProcess.push(roundRow(inProcess));
    result.server.push(roundRow(server));
    result.throughputRatio.push(round(server.goldEpisodesPerSec / inProcess.goldEpisodesPerSec));
    result.latencyOverheadMsP50.push(round(server.stepP50Ms - inProcess.stepP50Ms));
  }
  return result;
}

export function formatServeReport(result: ServeBenchResult): string {
  const header = ['sessions', 'mode', 'trivial steps/s', 'step p50 ms', 'step p99 ms', 'gold eps/s', 'gold < 1'];
  const rows = result.sessions.flatMap((_, i) =>
    (['inProcess', 'server'] as const).map((mode) => {
      const r = result[mode][i]!;
      return [r.sessions, mode === 'inProcess' ? 'in-process' : 'server', r.trivialStepsPerSec, r.stepP50Ms, r.stepP99Ms, r.goldEpisodesPerSec, r.goldBelowOne].map(String);
    }),
  );
  return [
    'serve bench: bash envs on a warm pool, in-process (VecEnv) and through the server (WebSocket clients)',
    '',
    ...formatTable(header, rows),
    '',
    ...result.sessions.map((n, i) => `${n} session(s): server/in-process gold episodes/s ${result.throughputRatio[i]}, added step p50 ${result.latencyOverheadMsP50[i]} ms`),
    '',
  ].join('\n');
}

export const serveBench = engineBench({
  name: 'serve',
  summary: 'the environment server against in-process VecEnv: trivial steps/s, gold episodes/s, step p50/p99, ratios',
  usage: SERVE_USAGE,
  parse: parseServeOptions,
  measure: (_docker, options, log) => measure(options, log),
  format: formatServeReport,
});
