/**
 * The chaos bench: gold episodes on a warm pool while sandboxes are killed from outside
 * (`docker kill`, as an OOM killer or an operator would), counting that every episode ends
 * scored or truncated with its cause and that no container is left afterwards.
 */
import type Docker from 'dockerode';
import { createBashEnvs, type BashEnv } from '../../envs/bash/index.js';
import { goldText } from '../datasets/index.js';
import { parseBenchArgs, positiveNumber } from './bench-args.js';
import { thisRunFilter } from '../sandbox/docker/labels.js';
import { seededRandom } from '../env/episode.js';
import { pooledVecEnv } from '../vec/make-vec-env.js';
import { closedLoop, TaskRotation } from './closed-loop.js';
import { engineBench } from './engine-bench.js';
import type { Bench } from './types.js';

export interface ChaosOptions {
  episodes: number;
  envs: number;
  /** Mean time between kills; each wait is uniform in [0.5, 1.5] × this. */
  killEveryMs: number;
  seed: number;
  json: boolean;
}

/** The `--json` output. */
export interface ChaosResult {
  /** Episodes that ended (scored + truncated); the run stops at --episodes. */
  episodes: number;
  /** Ended with `submit` and a reward. */
  scored: number;
  /** Scored episodes whose reward was below 1 (the gold solves every task: should be 0). */
  scoredBelowOne: number;
  /** Ended with `truncated` and `info.truncation` naming the cause. */
  truncatedWithCause: number;
  /** Ended some other way (truncated without a cause, or an error): should be 0. */
  unaccounted: number;
  /** Containers `docker kill`ed during the run. */
  kills: number;
  /** Containers of this run still present after the VecEnv closed (running or not): should be 0. */
  containersLeft: number;
  seconds: number;
  episodesPerSec: number;
}

const USAGE = `Usage: npm run bench -- chaos [options]

Gold episodes of the built-in bash tasks on N envs sharing a warm pool (VecEnv, send/recv,
next-step autoreset) while a killer \`docker kill\`s a random container of this run (in an
episode, idle in the pool, being restored, or the restorer's template) at random intervals.
Counts every episode as scored, or truncated with its cause; then closes everything and
counts the containers left. Exits 1 when an episode is unaccounted for or a container is left.

Options:
  --episodes N       episodes to finish (default 1000)
  --envs N           envs (default 8)
  --kill-every MS    mean time between kills (default 250)
  --seed N           seed for the killer's choices (default 1)
  --json             print only one JSON object on stdout:
                     {"episodes","scored","scoredBelowOne","truncatedWithCause","unaccounted",
                      "kills","containersLeft","seconds","episodesPerSec"}
  -h, --help         show this help
`;

function parseChaosOptions(args: readonly string[]): ChaosOptions | 'help' {
  const values = parseBenchArgs('chaos', args, {
    episodes: { type: 'string' },
    envs: { type: 'string' },
    'kill-every': { type: 'string' },
    seed: { type: 'string' },
  });
  if (values === 'help') return 'help';
  return {
    episodes: positiveNumber('--episodes', values.episodes, 1000, true),
    envs: positiveNumber('--envs', values.envs, 8, true),
    killEveryMs: positiveNumber('--kill-every', values['kill-every'], 250, true),
    seed: positiveNumber('--seed', values.seed, 1, true),
    json: values.json === true,
  };
}

const ours = (docker: Docker) => docker.listContainers({ all: true, filters: thisRunFilter() });

async function runChaos(docker: Docker, options: ChaosOptions, log: (line: string) => void): Promise<ChaosResult> {
  const envs: BashEnv[] = await createBashEnvs({}, options.envs);
  const tasks = envs[0]!.tasks;
  const rotation = new TaskRotation(tasks);
  const { vec, pool } = pooledVecEnv(envs, {
    autoreset: 'next-step',
    nextTask: rotation.nextTask,
  });
  const counts = { scored: 0, scoredBelowOne: 0, truncatedWithCause: 0, unaccounted: 0, kills: 0 };
  const ended = () => counts.scored + counts.truncatedWithCause + counts.unaccounted;
  const random = seededRandom(options.seed);
  let killing = true;
  const started = performance.now();
  try {
    await pool.ready();
    await vec.reset();
    const killer = (async () => {
      while (killing) {
        await new Promise((resolve) => setTimeout(resolve, options.killEveryMs * (0.5 + random())));
        if (!killing) break;
        const running = (await ours(docker)).filter((c) => c.State === 'running');
        const victim = running[Math.floor(random() * running.length)];
        if (!victim) continue;
        await docker.getContainer(victim.Id).kill().then(() => (counts.kills += 1), () => undefined);
      }
    })();
    let lastReport = 0;
    await closedLoop(vec, () => ended() < options.episodes, (envId) => goldText(rotation.of(envId)), (step) => {
      if (step.info.autoreset) return goldText(rotation.of(step.envId));
      if (step.truncated) {
        if (step.info.truncation?.message) counts.truncatedWithCause += 1;
        else counts.unaccounted += 1;
      } else if (step.terminated) {
        counts.scored += 1;
        if (step.reward < 1) {
          counts.scoredBelowOne += 1;
          log(`task ${rotation.of(step.envId).index} scored ${step.reward}: ${JSON.stringify(step.info.score ?? step.info).slice(0, 1000)}`);
        }
      } else return 'submit';
      if (ended() - lastReport >= 100) {
        lastReport = ended();
        log(`${lastReport} episodes: ${counts.scored} scored, ${counts.truncatedWithCause} truncated; ${counts.kills} kills; pool ${JSON.stringify(pool.stats())}`);
      }
      return 'reset';
    });
    killing = false;
    await killer;
  } finally {
    killing = false;
    await vec.close();
  }
  const seconds = (performance.now() - started) / 1000;
  const containersLeft = (await ours(docker)).length;
  return { episodes: ended(), ...counts, containersLeft, seconds: Number(seconds.toFixed(1)), episodesPerSec: Number((ended() / seconds).toFixed(1)) };
}

const accountedFor = (result: ChaosResult) => result.unaccounted === 0 && result.containersLeft === 0 && result.scoredBelowOne === 0;

export const chaosBench: Bench = engineBench({
  name: 'chaos',
  summary: 'gold episodes on a warm pool while containers are docker-killed: every episode scored or truncated with cause, none left',
  usage: USAGE,
  parse: parseChaosOptions,
  measure: runChaos,
  format: (result) =>
    [
      `chaos: ${result.episodes} episodes in ${result.seconds} s (${result.episodesPerSec}/s) with ${result.kills} containers killed`,
      `  scored ${result.scored} (below 1: ${result.scoredBelowOne}), truncated with cause ${result.truncatedWithCause}, unaccounted ${result.unaccounted}`,
      `  containers left after close: ${result.containersLeft}`,
      accountedFor(result) ? '  every episode accounted for; nothing left behind' : '  FAILED: see the counts above',
      '',
    ].join('\n'),
  failed: (result) => !accountedFor(result),
});
