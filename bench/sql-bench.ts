import { existsSync } from 'node:fs';
import { createSqlEnvs, type SqlEnv } from '../envs/sql/index.js';
import { IntercodeError } from '../src/errors.js';
import { packagePath } from '../src/package-path.js';
import { cpuUsageBetween, takeCpuSnapshot } from './host-cpu.js';
import { percentile } from './stats.js';
import type { Bench, BenchIO } from './types.js';
import { parseBenchArgs, positiveNumber } from './bench-args.js';
import { goldText } from '../src/datasets/index.js';

const SHARED = packagePath('..', 'shared', 'intercode-data', 'sql');
const LEVELS = [1, 16] as const;

const USAGE = `Usage: npm run bench -- sql [options]

Gold episodes (reset, the gold query, submit with full reward) against one SQL server,
read-only mode: all 1034 Spider dev tasks when ../shared/intercode-data exists, else the
built-in dataset. One unmeasured warm-up pass at 16 in flight (server caches, gold
cache), then --episodes episodes with 1 and with 16 episodes in flight (closed loop,
tasks in order, repeated as needed): episodes/s and p95 episode latency per level.

Options:
  --episodes N   episodes per level (default: the number of tasks, at least 2000)
  --embedded     the embedded SQLite backend over the built-in dataset instead of the server
  --json         print only one JSON object on stdout:
                 {"episodes","episodesPerSec":{"1","16"},"p95Ms":{"1","16"},"dataset",
                  "notFullReward","notFullTasks","cpuMsPerEpisode":{"1","16"}}
                 (episodes: per level; dataset: which tasks ran; notFullReward: measured
                 episodes whose reward was not 1, notFullTasks: their task indexes;
                 cpuMsPerEpisode: CPU time per episode from /proc, {"bench": this Node
                 process, "server": the processes in the SQL server's sandbox}, null
                 where /proc cannot tell)
  -h, --help     show this help
`;

/** CPU milliseconds per episode: the bench's own process, and the SQL server's sandbox. */
export interface EpisodeCpu {
  bench: number;
  server: number;
}

export interface SqlBenchResult {
  episodes: number;
  episodesPerSec: Record<'1' | '16', number>;
  p95Ms: Record<'1' | '16', number>;
  dataset: string;
  notFullReward: number;
  /** Tasks (by index) with an episode whose reward was not 1, in order. */
  notFullTasks: number[];
  cpuMsPerEpisode: Record<'1' | '16', EpisodeCpu | null>;
}

interface LevelResult {
  perSec: number;
  p95: number;
  notFull: number;
  notFullTasks: Set<number>;
  cpu: EpisodeCpu | null;
}

async function level(envs: readonly SqlEnv[], inFlight: number, episodes: number): Promise<LevelResult> {
  const tasks = envs[0]!.tasks;
  const latencies = new Float64Array(episodes);
  let next = 0;
  let notFull = 0;
  const notFullTasks = new Set<number>();
  const sandboxes = envs[0]!.backend.sandboxIds();
  const cpuBefore = takeCpuSnapshot(sandboxes);
  const started = performance.now();
  await Promise.all(
    envs.slice(0, inFlight).map(async (env) => {
      for (let i = next++; i < episodes; i = next++) {
        const task = tasks[i % tasks.length]!;
        const t0 = performance.now();
        await env.reset({ task });
        await env.step(goldText(task));
        const { reward } = await env.step('submit');
        latencies[i] = performance.now() - t0;
        if (reward !== 1) {
          notFull += 1;
          notFullTasks.add(task.index);
        }
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const cpuAfter = takeCpuSnapshot(sandboxes);
  let cpu: EpisodeCpu | null = null;
  if (cpuBefore && cpuAfter) {
    const usage = cpuUsageBetween(cpuBefore, cpuAfter);
    const msPerEpisode = (cores: number) => Number(((cores * usage.wallSeconds * 1000) / episodes).toFixed(3));
    cpu = { bench: msPerEpisode(usage.groups['bench node']), server: msPerEpisode(usage.groups['bench sandboxes']) };
  }
  return { perSec: episodes / elapsed, p95: percentile(latencies, 95), notFull, notFullTasks, cpu };
}

async function run(args: readonly string[], io: BenchIO): Promise<number> {
  let values;
  try {
    values = parseBenchArgs('sql', args, { episodes: { type: 'string' }, embedded: { type: 'boolean' } });
  } catch (error) {
    io.stderr.write(`bench sql: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values === 'help') {
    io.stdout.write(USAGE);
    return 0;
  }
  const spider = !values.embedded && existsSync(SHARED);
  const dataset = spider ? 'spider-dev' : 'built-in';
  let envs: SqlEnv[] = [];
  try {
    const count = values.episodes === undefined ? undefined : positiveNumber('--episodes', values.episodes, 0, true);
    envs = await createSqlEnvs(
      spider
        ? { data: `${SHARED}/spider/ic_spider_dev.json`, dumps: [`${SHARED}/spider/ic_spider_dbs.sql`], buildLog: (l) => io.stderr.write(`${l}\n`) }
        : { embedded: !!values.embedded, buildLog: (l) => io.stderr.write(`${l}\n`) },
      Math.max(...LEVELS),
    );
    const episodes = count ?? Math.max(envs[0]!.tasks.length, 2000);
    await level(envs, 16, envs[0]!.tasks.length);
    const results = { 1: await level(envs, 1, episodes), 16: await level(envs, 16, episodes) };
    const result: SqlBenchResult = {
      episodes,
      episodesPerSec: { 1: Math.round(results[1].perSec), 16: Math.round(results[16].perSec) },
      p95Ms: { 1: Number(results[1].p95.toFixed(3)), 16: Number(results[16].p95.toFixed(3)) },
      dataset,
      notFullReward: results[1].notFull + results[16].notFull,
      notFullTasks: [...new Set([...results[1].notFullTasks, ...results[16].notFullTasks])].sort((a, b) => a - b),
      cpuMsPerEpisode: { 1: results[1].cpu, 16: results[16].cpu },
    };
    if (values.json) io.stdout.write(`${JSON.stringify(result)}\n`);
    else {
      io.stdout.write(`dataset ${dataset}, ${episodes} gold episodes per level\n`);
      for (const n of LEVELS) {
        const cpu = result.cpuMsPerEpisode[n];
        const cpuText = cpu ? `, CPU per episode ${cpu.bench} ms bench + ${cpu.server} ms server` : '';
        io.stdout.write(`${String(n).padStart(2)} in flight: ${result.episodesPerSec[n]} episodes/s, p95 ${result.p95Ms[n]} ms${cpuText}\n`);
      }
      io.stdout.write(`episodes without full reward: ${result.notFullReward} (tasks ${result.notFullTasks.join(', ') || 'none'})\n`);
    }
    return 0;
  } catch (error) {
    io.stderr.write(`bench sql: ${error instanceof IntercodeError ? error.message : String((error as Error).stack ?? error)}\n`);
    return 1;
  } finally {
    await Promise.all(envs.map((env) => env.close()));
  }
}

/** `npm run bench -- sql`: gold episodes per second against one SQL server. */
export const sqlBench: Bench = { name: 'sql', summary: 'gold SQL episodes/s and p95 latency, 1 and 16 in flight (Spider dev or built-in)', run };
