/**
 * The chaos bench: gold episodes on a warm pool while sandboxes are killed from outside
 * (`docker kill`, as an OOM killer or an operator would), counting that every episode ends
 * scored or truncated with its cause and that no container is left afterwards.
 */
import type Docker from 'dockerode';
import { createBashEnvs, type BashEnv } from '../envs/bash/index.js';
import { goldText } from '../src/datasets/index.js';
import { parseBenchArgs, positiveNumber } from './bench-args.js';
import { thisRunFilter } from '../src/sandbox/docker/labels.js';
import { seededRandom } from '../src/env/episode.js';
import { pooledVecEnv } from '../src/vec/make-vec-env.js';
import { closedLoop, TaskRotation } from './closed-loop.js';
import { engineBench } from './engine-bench.js';
import type { Bench } from './types.js';
import type { V1Pod } from '@kubernetes/client-node';
import { spawn } from 'node:child_process';
import { open, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ConfigError } from '../src/errors.js';
import { isClusterTarget, loadCluster, parseClusterTarget, type Cluster } from '../src/sandbox/kubernetes/cluster.js';
import { thisRunSelector } from '../src/sandbox/kubernetes/pod-spec.js';
import { EngineSet } from '../src/sandbox/backends/engine-set.js';

export interface ChaosOptions {
  episodes: number;
  envs: number;
  /** Mean time between kills; each wait is uniform in [0.5, 1.5] × this. */
  killEveryMs: number;
  seed: number;
  json: boolean;
  /** `docker` (the local engine) or `k8s[:CONTEXT[/NAMESPACE]]`. */
  engine: string;
  /** pid file of a local kube-apiserver to stop and start again once, half-way through. */
  restartApiserver?: string;
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
  /** Containers (pods) of this run still present after the VecEnv closed (running or not): should be 0. */
  containersLeft: number;
  /** Times the kube-apiserver was restarted during the run (--restart-apiserver). */
  apiserverRestarts: number;
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
  --engine E         docker (default) or k8s[:CONTEXT[/NAMESPACE]]: pods, deleted (grace 0) by the killer
  --restart-apiserver PIDFILE
                     half-way through, stop the local kube-apiserver whose pid is in PIDFILE and
                     start it again with the same command line (../shared/k8s: run/kube-apiserver.pid)
  --json             print only one JSON object on stdout:
                     {"episodes","scored","scoredBelowOne","truncatedWithCause","unaccounted",
                      "kills","containersLeft","apiserverRestarts","seconds","episodesPerSec"}
  -h, --help         show this help
`;

function parseChaosOptions(args: readonly string[]): ChaosOptions | 'help' {
  const values = parseBenchArgs('chaos', args, {
    episodes: { type: 'string' },
    envs: { type: 'string' },
    'kill-every': { type: 'string' },
    seed: { type: 'string' },
    engine: { type: 'string' },
    'restart-apiserver': { type: 'string' },
  });
  if (values === 'help') return 'help';
  const engine = (values.engine as string | undefined) ?? 'docker';
  if (engine !== 'docker' && !isClusterTarget(engine)) throw new ConfigError('--engine', `must be docker or k8s[:CONTEXT[/NAMESPACE]], got "${engine}"`);
  const restart = values['restart-apiserver'] as string | undefined;
  return {
    engine,
    ...(restart ? { restartApiserver: restart } : {}),
    episodes: positiveNumber('--episodes', values.episodes, 1000, true),
    envs: positiveNumber('--envs', values.envs, 8, true),
    killEveryMs: positiveNumber('--kill-every', values['kill-every'], 250, true),
    seed: positiveNumber('--seed', values.seed, 1, true),
    json: values.json === true,
  };
}

const ours = (docker: Docker) => docker.listContainers({ all: true, filters: thisRunFilter() });

/** What the killer kills: this run's containers, or its pods. */
interface Victims {
  running(): Promise<string[]>;
  kill(id: string): Promise<boolean>;
  /** This run's sandboxes still present (pods being deleted count). */
  left(): Promise<number>;
}

function dockerVictims(docker: Docker): Victims {
  return {
    running: async () => (await ours(docker)).filter((c) => c.State === 'running').map((c) => c.Id),
    kill: (id) => docker.getContainer(id).kill().then(() => true, () => false),
    left: async () => (await ours(docker)).length,
  };
}

function podVictims(cluster: Cluster): Victims {
  const list = () => cluster.core.listNamespacedPod({ namespace: cluster.namespace, labelSelector: thisRunSelector() });
  return {
    running: async () => (await list().catch(() => ({ items: [] as V1Pod[] }))).items.filter((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp).map((p) => p.metadata!.name!),
    kill: (name) => cluster.core.deleteNamespacedPod({ name, namespace: cluster.namespace, gracePeriodSeconds: 0 }).then(() => true, () => false),
    left: async () => (await cluster.request('listing pods', list)).items.length,
  };
}

/**
 * The pid `pidFile` holds and that process's command line.
 * @throws ConfigError naming --restart-apiserver when the file cannot be read or its pid is no running kube-apiserver.
 */
async function apiserverProcess(pidFile: string): Promise<{ pid: number; argv: string[] }> {
  const text = await readFile(pidFile, 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw new ConfigError('--restart-apiserver', `cannot read ${pidFile} (${error.code ?? error.message})`);
  });
  const pid = Number(text.trim());
  const cmdline = Number.isInteger(pid) && pid > 0 ? await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '') : '';
  const argv = cmdline.split('\0').filter(Boolean);
  if (!argv[0]?.endsWith('kube-apiserver')) throw new ConfigError('--restart-apiserver', `${pidFile} holds "${text.trim().slice(0, 40)}", which is no running kube-apiserver's pid`);
  return { pid, argv };
}

/** Stops the kube-apiserver whose pid `pidFile` holds and starts it again with the same command line and log. */
async function restartApiserver(pidFile: string, log: (line: string) => void): Promise<void> {
  const { pid, argv } = await apiserverProcess(pidFile);
  process.kill(pid, 'SIGTERM');
  for (let i = 0; i < 100; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const logFile = await open(`${dirname(dirname(pidFile))}/logs/kube-apiserver.log`, 'a');
  const child = spawn(argv[0], argv.slice(1), { detached: true, stdio: ['ignore', logFile.fd, logFile.fd] });
  child.unref();
  await logFile.close();
  await writeFile(pidFile, `${child.pid}\n`);
  log(`kube-apiserver restarted (pid ${pid} -> ${child.pid})`);
}

async function runChaos(docker: Docker, options: ChaosOptions, log: (line: string) => void): Promise<ChaosResult> {
  const kubernetes = options.engine !== 'docker';
  const engines = kubernetes ? new EngineSet([{ endpoint: options.engine, weight: 1 }]) : EngineSet.local();
  const victims = kubernetes ? podVictims(await loadCluster(parseClusterTarget(options.engine))) : dockerVictims(docker);
  // A wrong pid file fails now, before any sandbox starts, not half-way through the run.
  if (options.restartApiserver) await apiserverProcess(options.restartApiserver);
  try {
    return await runChaosOn(engines, victims, options, log);
  } finally {
    engines.close();
  }
}

async function runChaosOn(engines: EngineSet, victims: Victims, options: ChaosOptions, log: (line: string) => void): Promise<ChaosResult> {
  const envs: BashEnv[] = await createBashEnvs({ engines }, options.envs);
  const tasks = envs[0]!.tasks;
  const rotation = new TaskRotation(tasks);
  const { vec, pool } = pooledVecEnv(envs, {
    autoreset: 'next-step',
    nextTask: rotation.nextTask,
  });
  const counts = { scored: 0, scoredBelowOne: 0, truncatedWithCause: 0, unaccounted: 0, kills: 0, apiserverRestarts: 0 };
  let restart: Promise<void> | undefined;
  let restartFailure: unknown;
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
        const running = await victims.running().catch(() => []);
        const victim = running[Math.floor(random() * running.length)];
        if (!victim) continue;
        if (await victims.kill(victim)) counts.kills += 1;
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
      if (options.restartApiserver && !restart && ended() >= options.episodes / 2) {
        // Settled here so a failure waits for the sandboxes to be closed, then ends the run.
        restart = restartApiserver(options.restartApiserver, log).then(
          () => void (counts.apiserverRestarts += 1),
          (error: unknown) => void (restartFailure = error),
        );
      }
      if (ended() - lastReport >= 100) {
        lastReport = ended();
        log(`${lastReport} episodes: ${counts.scored} scored, ${counts.truncatedWithCause} truncated; ${counts.kills} kills; pool ${JSON.stringify(pool.stats())}`);
      }
      return 'reset';
    });
    killing = false;
    await killer;
    await restart;
  } finally {
    killing = false;
    await vec.close();
  }
  if (restartFailure !== undefined) throw restartFailure;
  const seconds = (performance.now() - started) / 1000;
  // Deletions take a moment to finish on a cluster.
  let containersLeft = await victims.left();
  for (let i = 0; containersLeft > 0 && i < 60; i++) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    containersLeft = await victims.left();
  }
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
      `chaos: ${result.episodes} episodes in ${result.seconds} s (${result.episodesPerSec}/s) with ${result.kills} sandboxes killed, ${result.apiserverRestarts} apiserver restart(s)`,
      `  scored ${result.scored} (below 1: ${result.scoredBelowOne}), truncated with cause ${result.truncatedWithCause}, unaccounted ${result.unaccounted}`,
      `  containers left after close: ${result.containersLeft}`,
      accountedFor(result) ? '  every episode accounted for; nothing left behind' : '  FAILED: see the counts above',
      '',
    ].join('\n'),
  failed: (result) => !accountedFor(result),
});
