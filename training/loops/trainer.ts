/**
 * A training run: the random-policy baseline, behaviour cloning on demonstrations, then
 * REINFORCE on the env's reward, with greedy evaluations on training and held-out tasks
 * in between. Every iteration appends a metric record and saves a checkpoint; a resumed
 * run continues from the checkpoint's iteration, and because every random draw is derived
 * from the seed and the iteration (see rng.ts), it draws what the uninterrupted run would
 * have.
 */
import * as tf from '@tensorflow/tfjs';
import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
import type { Task } from '../../src/datasets/index.js';
import { ConfigError } from '../../src/errors.js';
import type { Policy, Rollout } from '../../src/policy/index.js';
import { ReplayBuffer } from '../buffer/replay-buffer.js';
import { demoTransitions, formatDemoLine, loadDemos, type DemoEpisode } from '../demos/demo-episode.js';
import { CandidateSet, harvestActions, type Exploration } from '../policy/candidates.js';
import { ScorerNetwork, type NetworkShape } from '../policy/network.js';
import { NeuralPolicy, RandomPolicy } from '../policy/neural-policy.js';
import { derive, shuffled } from '../rng.js';
import { exportOptimizer, importOptimizer, type SavedTensor } from '../run/optimizer-state.js';
import { loadCheckpoint, readRunConfig, readMetrics, runPaths, saveCheckpoint, truncateMetrics, writeJson, type MetricRecord, type RunPaths } from '../run/run-files.js';
import { behaviourCloningEpoch } from './behaviour-cloning.js';
import type { EpisodeRunner } from './episode-runner.js';
import { policyGradientStep } from './policy-gradient.js';
import { isSolved } from '../../src/scoring/solved.js';

export interface TrainSettings {
  env: string;
  seed: number;
  /** Share of the env's tasks kept out of training (default 0.2). */
  heldOutFraction: number;
  /** Actions per episode before a submit is forced. */
  turnLimit: number;
  bcEpochs: number;
  bcBatchSize: number;
  bcSampling: 'uniform' | 'prioritized';
  bcLearningRate: number;
  pgIterations: number;
  /** Episodes per policy-gradient iteration. */
  pgEpisodes: number;
  pgLearningRate: number;
  valueCoef: number;
  entropyCoef: number;
  /** A greedy evaluation after every this many PG iterations (and after the last). */
  evalEvery: number;
  shape: NetworkShape;
}

/** What `config.json` holds. */
export interface RunConfig {
  settings: TrainSettings;
  split: { train: string[]; heldOut: string[] };
  /** Actions harvested from the training demonstrations (the candidate set adds submit and exploration). */
  harvested: string[];
}

/** One step of a run's schedule. */
type Stage = { phase: 'baseline' } | { phase: 'bc'; epoch: number } | { phase: 'eval' } | { phase: 'pg'; round: number };

export function schedule(settings: TrainSettings): Stage[] {
  const stages: Stage[] = [{ phase: 'baseline' }];
  for (let epoch = 0; epoch < settings.bcEpochs; epoch++) stages.push({ phase: 'bc', epoch });
  stages.push({ phase: 'eval' });
  for (let round = 0; round < settings.pgIterations; round++) {
    stages.push({ phase: 'pg', round });
    if ((round + 1) % settings.evalEvery === 0 || round === settings.pgIterations - 1) stages.push({ phase: 'eval' });
  }
  return stages;
}

/**
 * Creates a run folder: splits the env's tasks into training and held-out by the seed,
 * keeps the solved demonstrations of training tasks, and harvests their actions.
 * @throws ConfigError when the folder already holds a run, or no demonstration fits a training task.
 */
export function createRun(dir: string, settings: TrainSettings, tasks: readonly Task[], demos: readonly DemoEpisode[]): RunConfig {
  const paths = runPaths(dir);
  if (existsSync(paths.config)) throw new ConfigError('--run', `${dir} already holds a run; pass --resume to continue it, or choose another name`);
  const ids = shuffled(tasks.map((t) => t.id), derive(settings.seed, 'split'));
  const heldOutCount = Math.round(ids.length * settings.heldOutFraction);
  const heldOut = ids.slice(0, heldOutCount);
  const train = ids.slice(heldOutCount);
  const trainIds = new Set(train);
  const kept = demos.filter((d) => d.env === settings.env && trainIds.has(d.task_id) && isSolved(d.reward));
  if (kept.length === 0) throw new ConfigError('--demos', `has no solved ${settings.env} episode of a training task (of ${demos.length} episodes)`);
  const config: RunConfig = { settings, split: { train, heldOut }, harvested: harvestActions(kept) };
  writeJson(paths.config, config);
  writeFileSync(paths.demos, kept.map((d) => `${formatDemoLine(d)}\n`).join(''));
  return config;
}

/** Success rate and mean reward of a set of rollouts. */
function outcome(rollouts: readonly Rollout[]): { successRate: number; meanReward: number } {
  const n = Math.max(1, rollouts.length);
  return { successRate: rollouts.filter((r) => isSolved(r.reward)).length / n, meanReward: rollouts.reduce((s, r) => s + r.reward, 0) / n };
}

export interface TrainOptions {
  runner: EpisodeRunner;
  /** The env's exploratory actions, offered besides the demonstrated ones. */
  exploration: Exploration;
  resume: boolean;
  log: (line: string) => void;
  /** Called after each iteration's record is written (progress display). */
  onIteration?: (record: MetricRecord, total: number) => void;
}

/** The figures a run ends with. Rates are fractions 0..1. */
export interface TrainSummary {
  run: string;
  trainTasks: number;
  heldOutTasks: number;
  candidates: number;
  baseline: { train: number; heldOut: number };
  afterBc: { train: number; heldOut: number };
  final: { train: number; heldOut: number; trainMeanReward: number; heldOutMeanReward: number };
  /** Mean env steps per second over the policy-gradient iterations (episodes played in parallel). */
  envStepsPerSec: number;
  iterations: number;
  elapsedSec: number;
}

/**
 * Runs (or resumes) the run in `dir` to the end of its schedule.
 * @throws ConfigError when resuming a run without a checkpoint, or starting over one that has one.
 */
export async function train(dir: string, options: TrainOptions): Promise<TrainSummary> {
  const paths = runPaths(dir);
  const config = readRunConfig<RunConfig>(paths.config, '--run');
  const { settings } = config;
  const stages = schedule(settings);
  const checkpoint = loadCheckpoint(paths);
  if (checkpoint && !options.resume) throw new ConfigError('--run', `${dir} has a checkpoint at iteration ${checkpoint.nextIteration}; pass --resume to continue it`);

  const tasksById = new Map(options.runner.tasks.map((t) => [t.id, t]));
  const pick = (ids: string[]) =>
    ids.map((id) => {
      const task = tasksById.get(id);
      if (!task) throw new ConfigError('--data', `lacks task "${id}" of the run's split (train with the same tasks)`);
      return task;
    });
  const trainTasks = pick(config.split.train);
  const heldOutTasks = pick(config.split.heldOut);
  const candidates = new CandidateSet(config.harvested, options.exploration);
  const network = new ScorerNetwork(settings.shape, derive(settings.seed, 'init'));
  const bcOptimizer = tf.train.adam(settings.bcLearningRate);
  const pgOptimizer = tf.train.adam(settings.pgLearningRate);
  const demos = loadDemos(paths.demos);
  const buffer = new ReplayBuffer({ capacity: Math.max(1, demos.reduce((n, d) => n + d.actions.length, 0)) });
  demos.forEach((d, i) => buffer.addMany(demoTransitions(d, `demo-${i}`)));

  let first = 0;
  let priorSec = 0;
  if (checkpoint && options.resume) {
    network.importWeights(checkpoint.weights);
    for (const [key, optimizer] of [['bc', bcOptimizer], ['pg', pgOptimizer]] as const) {
      const saved = checkpoint.optimizers[key] ?? [];
      if (saved.length > 0) await importOptimizer(optimizer, saved);
    }
    first = checkpoint.nextIteration;
    priorSec = checkpoint.elapsedSec;
    truncateMetrics(paths.metrics, first);
    options.log(`resuming ${dir} at iteration ${first} of ${stages.length}`);
  } else {
    writeFileSync(paths.metrics, '');
  }

  const started = performance.now();
  const elapsed = () => priorSec + (performance.now() - started) / 1000;
  const play = async (tasks: readonly Task[], policyFor: (i: number) => Policy) => {
    const t0 = performance.now();
    const rollouts = await options.runner.play(tasks.map((task, i) => ({ task, policy: policyFor(i) })), { turnLimit: settings.turnLimit });
    const seconds = (performance.now() - t0) / 1000;
    const envSteps = rollouts.reduce((n, r) => n + r.turns.length, 0);
    return { rollouts, envSteps, envStepsPerSec: envSteps / seconds };
  };
  const greedy = new NeuralPolicy(network, candidates, { kind: 'greedy' });

  try {
    for (let iteration = first; iteration < stages.length; iteration++) {
      const stage = stages[iteration]!;
      let record: MetricRecord;
      if (stage.phase === 'baseline' || stage.phase === 'eval') {
        const policyFor = (i: number): Policy => (stage.phase === 'baseline' ? new RandomPolicy(candidates, derive(settings.seed, 'baseline', i)) : greedy);
        const played = await play([...trainTasks, ...heldOutTasks], policyFor);
        const onTrain = outcome(played.rollouts.slice(0, trainTasks.length));
        const onHeldOut = outcome(played.rollouts.slice(trainTasks.length));
        record = {
          iteration,
          phase: stage.phase,
          ...onTrain,
          heldOutSuccessRate: onHeldOut.successRate,
          heldOutMeanReward: onHeldOut.meanReward,
          episodes: played.rollouts.length,
          envSteps: played.envSteps,
          envStepsPerSec: played.envStepsPerSec,
          elapsedSec: 0,
        };
      } else if (stage.phase === 'bc') {
        const result = behaviourCloningEpoch(network, bcOptimizer, buffer, candidates, { batchSize: settings.bcBatchSize, sampling: settings.bcSampling, random: derive(settings.seed, 'bc', stage.epoch) });
        record = { iteration, phase: 'bc', loss: result.loss, accuracy: result.accuracy, elapsedSec: 0 };
      } else {
        const order = shuffled(trainTasks, derive(settings.seed, 'pg-tasks', stage.round));
        const tasks = Array.from({ length: settings.pgEpisodes }, (_, i) => order[i % order.length]!);
        const played = await play(tasks, (i) => new NeuralPolicy(network, candidates, { kind: 'sample', random: derive(settings.seed, 'pg', stage.round, i) }));
        const loss = policyGradientStep(network, pgOptimizer, played.rollouts, candidates, { turnLimit: settings.turnLimit, valueCoef: settings.valueCoef, entropyCoef: settings.entropyCoef });
        record = { iteration, phase: 'pg', ...(loss === undefined ? {} : { loss }), ...outcome(played.rollouts), episodes: played.rollouts.length, envSteps: played.envSteps, envStepsPerSec: played.envStepsPerSec, elapsedSec: 0 };
      }
      record.elapsedSec = elapsed();
      // The record first: a kill before the checkpoint lands redoes this iteration, and the resume drops the record.
      appendFileSync(paths.metrics, `${JSON.stringify(record)}\n`);
      await writeCheckpoint(paths, network, { bc: bcOptimizer, pg: pgOptimizer }, iteration + 1, record.elapsedSec);
      options.onIteration?.(record, stages.length);
    }
  } finally {
    network.dispose();
    bcOptimizer.dispose();
    pgOptimizer.dispose();
  }
  return summarize(dir, config, candidates.fixed.length, readMetrics(paths.metrics));
}

async function writeCheckpoint(paths: RunPaths, network: ScorerNetwork, optimizers: Record<string, tf.AdamOptimizer>, nextIteration: number, elapsedSec: number): Promise<void> {
  const saved: Record<string, SavedTensor[]> = {};
  for (const [key, optimizer] of Object.entries(optimizers)) saved[key] = await exportOptimizer(optimizer);
  saveCheckpoint(paths, { version: 1, nextIteration, weights: network.exportWeights(), optimizers: saved, elapsedSec });
}

function summarize(dir: string, config: RunConfig, candidates: number, metrics: readonly MetricRecord[]): TrainSummary {
  const evals = metrics.filter((m) => m.phase === 'eval');
  const baseline = metrics.find((m) => m.phase === 'baseline');
  const afterBc = evals[0];
  const last = evals.at(-1);
  const pg = metrics.filter((m) => m.phase === 'pg');
  return {
    run: dir,
    trainTasks: config.split.train.length,
    heldOutTasks: config.split.heldOut.length,
    candidates,
    baseline: { train: baseline?.successRate ?? 0, heldOut: baseline?.heldOutSuccessRate ?? 0 },
    afterBc: { train: afterBc?.successRate ?? 0, heldOut: afterBc?.heldOutSuccessRate ?? 0 },
    final: { train: last?.successRate ?? 0, heldOut: last?.heldOutSuccessRate ?? 0, trainMeanReward: last?.meanReward ?? 0, heldOutMeanReward: last?.heldOutMeanReward ?? 0 },
    envStepsPerSec: pg.length ? pg.reduce((s, m) => s + (m.envStepsPerSec ?? 0), 0) / pg.length : 0,
    iterations: metrics.length,
    elapsedSec: metrics.at(-1)?.elapsedSec ?? 0,
  };
}
