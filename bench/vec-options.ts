import { ConfigError, oneOf } from '../src/errors.js';
import { SANDBOX_KINDS, type SandboxKind } from '../src/sandbox/types.js';
import { isClusterTarget } from '../src/sandbox/kubernetes/cluster.js';
import { parseBenchArgs, positiveNumber } from './bench-args.js';
import type { ThreadComparisonOptions } from './vec-threads.js';

/** The vec bench's settings, resolved. */
export interface VecBenchOptions {
  /** Env counts, one table block each. */
  envs: number[];
  /** Worker-thread counts for reward computation, tried at every env count. */
  workers: number[];
  /** Measured seconds per phase (trivial steps, gold episodes) and configuration. */
  durationSec: number;
  json: boolean;
  /** OCI runtimes to measure in turn in this run (the first one's figures are the result's own). */
  runtimes?: string[];
  /** Where sandboxes run: `docker` (the local engine) or `k8s[:CONTEXT[/NAMESPACE]]`. */
  engine: string;
  /** What a sandbox is on the local engine (`--sandbox-kind`); the CLI's default when absent. */
  sandboxKind?: SandboxKind;
  /** How the pool cleans a used sandbox: restored in place, or replaced by a new one. */
  clean: 'restore' | 'replace';
  /** With --threads or --env: only the thread comparison runs (see vec-threads.ts). */
  threadComparison?: ThreadComparisonOptions;
  /** With --transfer: only the transfer comparison runs (see transfer-compare.ts), this many rounds. */
  transferRounds?: number;
}

/** Envs in the thread comparison when --envs is not given. */
export const DEFAULT_THREADED_ENVS = 8;

export const DEFAULT_VEC_OPTIONS: VecBenchOptions = { envs: [1, 4, 16, 64], workers: [0, 1, 2], durationSec: 5, json: false, engine: 'docker', clean: 'restore' };

export const VEC_USAGE = `Usage: npm run bench -- vec [options]

Throughput of N bash envs driven as one VecEnv (EnvPool-style send/recv, every env in a
closed loop) over one warm pool of sandboxes restored in place, with the built-in dataset:
  - trivial steps: every env steps \`echo hi\` -> steps/s, step latency p50/p99;
  - gold episodes: reset (a warm sandbox from the pool) + the task's gold command + submit
    (full reward, with the gold outcome cached per task) -> episodes/s, reset p50/p99,
    and how many episodes scored below 1 (should be 0);
  - memory per warm sandbox: the engine's memory figure (usage minus page cache) averaged
    over the pool's sandboxes;
  - workers: reward computation on 0 (the event loop's thread), 1 or 2 piscina threads;
  - sequential: one env alone, no VecEnv, no pool (a new sandbox per reset, the plain
    env's default) -> the baseline for the speed-up.
Each phase has a 1 s warm-up that is not counted, and each env count starts with one
gold phase that is not counted (a new pool's first episodes queue behind its first
restores). Every sandbox is removed at the end, on errors and on Ctrl-C / SIGTERM.

Options:
  --envs LIST      env counts (default ${DEFAULT_VEC_OPTIONS.envs.join(',')})
  --workers LIST   worker-thread counts (default ${DEFAULT_VEC_OPTIONS.workers.join(',')})
  --duration SEC   measured seconds per phase and configuration (default ${DEFAULT_VEC_OPTIONS.durationSec})
  --runtimes A,B   measure everything once per OCI runtime, in this run (e.g. runc,runsc;
                   under a runtime other than runc the pool replaces used sandboxes
                   instead of restoring them); the JSON gets "runtimes":[{runtime,...}]
  --engine E       docker (the local engine, default) or k8s[:CONTEXT[/NAMESPACE]] (pods; memory not measured there)
  --sandbox-kind K containers (default), auto, or episode-roots (a fresh root per sandbox inside one
                   pool container: the pool replaces used sandboxes, never restores them;
                   memory is then read from the roots' own cgroups)
  --clean MODE     restore (in place, default) or replace (a new sandbox per episode);
                   under an OCI runtime other than runc the pool always replaces
  --threads LIST   thread comparison: the envs on the main thread (1, today's path) and in
                   N piscina worker threads, measured in one run (gold episodes in next-step
                   autoreset); only this runs. --envs then gives one env count (its
                   largest value; default ${DEFAULT_THREADED_ENVS}). The JSON is
                   {"env","envs","durationSec","hostCores","loadAverage1m",
                    "byThreads":{"1":{"episodesPerSec","mainThreadCpuMsPerEpisode",...},...},
                    "speedupOverOneThread"}
  --env E          bash (default; Docker) or sqlite (the SQL env's embedded SQLite backend,
                   no Docker; implies --threads 1,2 unless given)
  --rounds N       thread comparison: measurements per thread count, alternating (default 1);
                   --transfer: rounds per method (default 3)
  --transfer       only how a worker thread's step answers reach the main thread, structured
                   clone vs msgpackr (packed, buffer transferred), interleaved, --duration s
                   a round (8 in flight): {"methods":{"clone":{"roundTripsPerSec",
                   "mainThreadCpuUsPerRoundTrip"},"msgpackr":{...}},"rounds","secondsPerRound"}
  --json           print only one JSON object on stdout:
                   {"trivialStepsPerSec","goldEpisodesPerSec","sequentialGoldEpisodesPerSec",
                    "speedup","resetP50Ms","resetP99Ms","stepP50Ms","stepP99Ms",
                    "memoryPerSandboxMiB","bestTrivial","bestGold","table":[...]}
                   (see docs/performance.md and docs/cli.md)
  -h, --help       show this help
`;

function list(option: string, text: string | undefined, fallback: number[], min: number): number[] {
  if (text === undefined) return fallback;
  const values = text.split(',').map((part) => Number(part.trim()));
  if (text.trim() === '' || values.some((v) => !Number.isInteger(v) || v < min)) {
    throw new ConfigError(option, `must be a comma-separated list of integers ≥ ${min} (got "${text}")`);
  }
  return [...new Set(values)].sort((a, b) => a - b);
}

/**
 * Parses the vec bench's arguments.
 * @returns the options, or "help".
 * @throws ConfigError naming the bad option.
 */
export function parseVecOptions(args: readonly string[]): VecBenchOptions | 'help' {
  const values = parseBenchArgs('vec', args, {
    envs: { type: 'string' },
    workers: { type: 'string' },
    duration: { type: 'string' },
    runtimes: { type: 'string' },
    engine: { type: 'string' },
    'sandbox-kind': { type: 'string' },
    clean: { type: 'string' },
    threads: { type: 'string' },
    env: { type: 'string' },
    rounds: { type: 'string' },
    transfer: { type: 'boolean' },
  });
  if (values === 'help') return 'help';
  const engine = (values.engine as string | undefined) ?? DEFAULT_VEC_OPTIONS.engine;
  if (engine !== 'docker' && !isClusterTarget(engine)) throw new ConfigError('--engine', `must be docker or k8s[:CONTEXT[/NAMESPACE]], got "${engine}"`);
  const durationSec = positiveNumber('--duration', values.duration, DEFAULT_VEC_OPTIONS.durationSec, false);
  const threadComparison =
    values.threads !== undefined || values.env !== undefined
      ? {
          env: oneOf('--env', (values.env as string | undefined) ?? 'bash', ['bash', 'sqlite'] as const),
          threads: list('--threads', values.threads as string | undefined, [1, 2], 1),
          envs: Math.max(...list('--envs', values.envs as string | undefined, [DEFAULT_THREADED_ENVS], 1)),
          durationSec,
          rounds: list('--rounds', values.rounds as string | undefined, [1], 1)[0]!,
        }
      : undefined;
  if (values.rounds !== undefined && !threadComparison && values.transfer !== true) throw new ConfigError('--rounds', 'applies to the thread comparison (--threads) and to --transfer');
  return {
    ...(values.transfer === true ? { transferRounds: list('--rounds', values.rounds as string | undefined, [3], 1)[0]! } : {}),
    ...(threadComparison ? { threadComparison } : {}),
    engine,
    clean: oneOf('--clean', (values.clean as string | undefined) ?? DEFAULT_VEC_OPTIONS.clean, ['restore', 'replace'] as const),
    envs: list('--envs', values.envs as string | undefined, DEFAULT_VEC_OPTIONS.envs, 1),
    workers: list('--workers', values.workers as string | undefined, DEFAULT_VEC_OPTIONS.workers, 0),
    durationSec,
    json: values.json === true,
    ...(values.runtimes !== undefined ? { runtimes: runtimeList(values.runtimes as string) } : {}),
    ...(values['sandbox-kind'] !== undefined ? { sandboxKind: oneOf('--sandbox-kind', values['sandbox-kind'] as string, SANDBOX_KINDS) } : {}),
  };
}

function runtimeList(text: string): string[] {
  const names = text.split(',').map((name) => name.trim());
  if (names.some((name) => !/^[A-Za-z0-9][\w.-]*$/.test(name))) throw new ConfigError('--runtimes', `must list runtimes such as runc,runsc (got "${text}")`);
  return names;
}
