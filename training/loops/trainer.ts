/**
 * A training run: the random-policy baseline, retrieval without learning, imitation of the
 * corpus (outside the env), behaviour cloning on env demonstrations, then REINFORCE on the
 * env's reward, with greedy evaluations on training and held-out tasks in between. Every iteration appends a metric record and saves a checkpoint; a resumed
 * run continues from the checkpoint's iteration, and because every random draw is derived
 * from the seed and the iteration (see rng.ts), it draws what the uninterrupted run would
 * have.
 */
import * as tf from '@tensorflow/tfjs';
import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
import { goldText, type Task } from '../../src/datasets/index.js';
import { ConfigError } from '../../src/errors.js';
import type { Policy } from '../../src/policy/index.js';
import { ReplayBuffer } from '../buffer/replay-buffer.js';
import { demoTransitions, formatDemoLine, loadDemos, type DemoEpisode } from '../demos/demo-episode.js';
import { CommandRetriever } from '../corpus/command-retriever.js';
import { NearDuplicateFilter, NEAR_DUPLICATE_RULE, type TextPair } from '../corpus/near-duplicates.js';
import { loadCorpus } from '../corpus/nl2bash-corpus.js';
import { CandidateSet, harvestActions } from '../scorer/candidates.js';
import type { CorpusName, Exploration } from '../../src/env/training-facts.js';
import { ScorerNetwork, type NetworkShape } from '../scorer/network.js';
import type { PolicyState } from '../scorer/features.js';
import { NeuralPolicy, RandomPolicy, RetrievalPolicy } from '../scorer/neural-policy.js';
import { derive, shuffled } from '../rng.js';
import { exportOptimizer, importOptimizer, type SavedTensor } from '../run/optimizer-state.js';
import { loadCheckpoint, readRunConfig, readMetrics, runPaths, saveCheckpoint, truncateMetrics, writeJson, type MetricRecord, type RunPaths } from '../run/run-files.js';
import { behaviourCloningEpoch } from './behaviour-cloning.js';
import { corpusImitation, corpusPairs, retrievalPairs } from './corpus-stage.js';
import type { EpisodeRunner } from './episode-runner.js';
import { notScoredOf, rolloutOutcome } from './rollout-outcome.js';
import { outcomeOf, type Outcome } from './outcome.js';
import { onPolicyBuffer, policyGradientStep } from './policy-gradient.js';
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
  /** The corpus imitated before the env demonstrations and searched for candidates (absent: none). */
  corpus?: CorpusName;
  /** Corpus-imitation epochs (absent: 0). */
  corpusEpochs?: number;
  /** Corpus pairs drawn per corpus-imitation epoch (absent: the whole corpus). */
  corpusPairsPerEpoch?: number;
  /**
   * Remove from training every training task that is a near-duplicate of a held-out task
   * (`intercode train` always does; absent: kept). Corpus pairs are always filtered.
   */
  removeNearDuplicates?: boolean;
  /** Retrieved candidates per state: the adapted commands of this many nearest descriptions (absent or 0: no retrieval). */
  retrieved?: number;
}

/** What `config.json` holds. */
export interface RunConfig {
  settings: TrainSettings;
  split: { train: string[]; heldOut: string[] };
  /** Actions harvested from the training demonstrations (the candidate set adds submit and exploration). */
  harvested: string[];
  /** What near-duplicate removal took out of what the policy learns from (absent in runs made before it). */
  nearDuplicates?: NearDuplicateRecord;
}

/** The near-duplicate rule applied at the run's creation and what it removed. */
export interface NearDuplicateRecord {
  rule: string;
  /** Training tasks removed from training because they are near-duplicates of a held-out task. */
  trainTasks: string[];
  /** Indices of corpus pairs removed, and how many by each part of the rule. */
  corpus: number[];
  corpusBy: { description: number; command: number };
}

/** One step of a run's schedule. */
type Stage = { phase: 'baseline' } | { phase: 'retrieval' } | { phase: 'corpus'; epoch: number } | { phase: 'bc'; epoch: number } | { phase: 'eval' } | { phase: 'pg'; round: number };

export function schedule(settings: TrainSettings): Stage[] {
  const stages: Stage[] = [{ phase: 'baseline' }];
  if ((settings.retrieved ?? 0) > 0) stages.push({ phase: 'retrieval' });
  if (settings.corpus === 'nl2bash' && (settings.retrieved ?? 0) > 0) for (let epoch = 0; epoch < (settings.corpusEpochs ?? 0); epoch++) stages.push({ phase: 'corpus', epoch });
  for (let epoch = 0; epoch < settings.bcEpochs; epoch++) stages.push({ phase: 'bc', epoch });
  stages.push({ phase: 'eval' });
  for (let round = 0; round < settings.pgIterations; round++) {
    stages.push({ phase: 'pg', round });
    if ((round + 1) % settings.evalEvery === 0 || round === settings.pgIterations - 1) stages.push({ phase: 'eval' });
  }
  return stages;
}

const taskPair = (task: Task): TextPair => ({ description: task.query, command: goldText(task) });

/**
 * Creates a run folder: splits the env's tasks into training and held-out by the seed,
 * removes from training every task and corpus pair that is a near-duplicate of a held-out
 * task, keeps the solved demonstrations of the remaining training tasks, and harvests their actions.
 * @throws ConfigError when the folder already holds a run, or no demonstration fits a training task.
 */
export function createRun(dir: string, settings: TrainSettings, tasks: readonly Task[], demos: readonly DemoEpisode[]): RunConfig {
  const paths = runPaths(dir);
  if (existsSync(paths.config)) throw new ConfigError('--run', `${dir} already holds a run; pass --resume to continue it, or choose another name`);
  const ids = shuffled(tasks.map((t) => t.id), derive(settings.seed, 'split'));
  const heldOutCount = Math.round(ids.length * settings.heldOutFraction);
  const heldOut = ids.slice(0, heldOutCount);
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const filter = new NearDuplicateFilter(heldOut.map((id) => taskPair(byId.get(id)!)));
  const candidatesForTraining = ids.slice(heldOutCount);
  const train = settings.removeNearDuplicates ? candidatesForTraining.filter((id) => filter.reason(taskPair(byId.get(id)!)) === undefined) : candidatesForTraining;
  const corpus = settings.corpus === 'nl2bash' ? loadCorpus() : [];
  const removedCorpus = corpus.flatMap((pair, i) => (filter.reason(pair) ? [i] : []));
  const corpusBy = { description: 0, command: 0 };
  for (const i of removedCorpus) corpusBy[filter.reason(corpus[i]!)!]++;
  const nearDuplicates: NearDuplicateRecord = { rule: NEAR_DUPLICATE_RULE, trainTasks: candidatesForTraining.filter((id) => !train.includes(id)), corpus: removedCorpus, corpusBy };
  const trainIds = new Set(train);
  const kept = demos.filter((d) => d.env === settings.env && trainIds.has(d.task_id) && isSolved(d.reward));
  if (kept.length === 0) throw new ConfigError('--demos', `has no solved ${settings.env} episode of a training task (of ${demos.length} episodes)`);
  const config: RunConfig = { settings, split: { train, heldOut }, harvested: harvestActions(kept), nearDuplicates };
  writeJson(paths.config, config);
  writeFileSync(paths.demos, kept.map((d) => `${formatDemoLine(d)}\n`).join(''));
  return config;
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

export interface TrainSummary {
  run: string;
  trainTasks: number;
  heldOutTasks: number;
  candidates: number;
  /** What near-duplicate removal took out: training tasks, and corpus pairs (with how many remain). */
  nearDuplicates: { trainTasks: number; corpusRemoved: number; corpusKept: number };
  baseline: Outcome;
  /** Retrieval without learning (absent when the run retrieves nothing). */
  retrieval?: Outcome;
  afterBc: Outcome;
  final: Outcome;
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
  const demos = loadDemos(paths.demos);
  const corpus = corpusPairs(settings.corpus, config.nearDuplicates?.corpus ?? []);
  const { candidates, retriever } = runCandidates(config, corpus, demos, options.exploration);
  const network = new ScorerNetwork(settings.shape, derive(settings.seed, 'init'));
  const bcOptimizer = tf.train.adam(settings.bcLearningRate);
  const pgOptimizer = tf.train.adam(settings.pgLearningRate);
  const buffer = new ReplayBuffer({ capacity: Math.max(1, demos.reduce((n, d) => n + d.actions.length, 0)) });
  demos.forEach((d, i) => buffer.addMany(demoTransitions(d, `demo-${i}`)));
  // A demonstrated action is offered in its own state even where retrieval does not find it (adapted differently, or past the nearest).
  const fromDemo = (t: PolicyState & { action: string }) => [...new Set([t.action, ...candidates.forState({ query: t.query, observation: t.observation, previousAction: t.previousAction, step: t.step })])];
  let imitation: ReturnType<typeof corpusImitation> | undefined;
  const corpusImitationData = () => (imitation ??= corpusImitation(corpus, retriever!, settings.retrieved ?? 0));

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
      if (stage.phase === 'baseline' || stage.phase === 'retrieval' || stage.phase === 'eval') {
        const retrieval = new RetrievalPolicy(candidates);
        const policyFor = (i: number): Policy => (stage.phase === 'baseline' ? new RandomPolicy(candidates, derive(settings.seed, 'baseline', i)) : stage.phase === 'retrieval' ? retrieval : greedy);
        const played = await play([...trainTasks, ...heldOutTasks], policyFor);
        const onTrain = rolloutOutcome(played.rollouts.slice(0, trainTasks.length));
        const onHeldOut = rolloutOutcome(played.rollouts.slice(trainTasks.length));
        record = {
          iteration,
          phase: stage.phase,
          ...onTrain,
          heldOutSuccessRate: onHeldOut.successRate,
          ...(onHeldOut.meanReward === undefined ? {} : { heldOutMeanReward: onHeldOut.meanReward }),
          ...notScoredOf(played.rollouts),
          episodes: played.rollouts.length,
          envSteps: played.envSteps,
          envStepsPerSec: played.envStepsPerSec,
          elapsedSec: 0,
        };
      } else if (stage.phase === 'corpus') {
        const data = corpusImitationData();
        const batches = Math.ceil(Math.min(data.buffer.size, settings.corpusPairsPerEpoch ?? data.buffer.size) / settings.bcBatchSize);
        const result = behaviourCloningEpoch(network, bcOptimizer, data.buffer, data.candidatesOf, { batchSize: settings.bcBatchSize, batches, sampling: 'uniform', random: derive(settings.seed, 'corpus', stage.epoch) });
        record = { iteration, phase: 'corpus', loss: result.loss, accuracy: result.accuracy, elapsedSec: 0 };
      } else if (stage.phase === 'bc') {
        const result = behaviourCloningEpoch(network, bcOptimizer, buffer, fromDemo, { batchSize: settings.bcBatchSize, sampling: settings.bcSampling, random: derive(settings.seed, 'bc', stage.epoch) });
        record = { iteration, phase: 'bc', loss: result.loss, accuracy: result.accuracy, elapsedSec: 0 };
      } else {
        const order = shuffled(trainTasks, derive(settings.seed, 'pg-tasks', stage.round));
        const tasks = Array.from({ length: settings.pgEpisodes }, (_, i) => order[i % order.length]!);
        const played = await play(tasks, (i) => new NeuralPolicy(network, candidates, { kind: 'sample', random: derive(settings.seed, 'pg', stage.round, i) }));
        const episodes = onPolicyBuffer(settings.env, played.rollouts, `pg-${stage.round}`).episodes();
        const loss = policyGradientStep(network, pgOptimizer, episodes, candidates, { turnLimit: settings.turnLimit, valueCoef: settings.valueCoef, entropyCoef: settings.entropyCoef });
        record = { iteration, phase: 'pg', ...(loss === undefined ? {} : { loss }), ...rolloutOutcome(played.rollouts), ...notScoredOf(played.rollouts), episodes: played.rollouts.length, envSteps: played.envSteps, envStepsPerSec: played.envStepsPerSec, elapsedSec: 0 };
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
  return summarize(dir, config, candidates.fixed.length, corpus.length, readMetrics(paths.metrics));
}

/**
 * The candidate set of a run: its harvested actions, and with `settings.retrieved` > 0 a
 * retriever over the corpus pairs left after near-duplicate removal and the training demonstrations.
 */
export function runCandidates(config: RunConfig, corpus: readonly TextPair[], demos: readonly DemoEpisode[], exploration: Exploration): { candidates: CandidateSet; retriever?: CommandRetriever } {
  const perState = config.settings.retrieved ?? 0;
  if (perState <= 0) return { candidates: new CandidateSet(config.harvested, exploration) };
  const retriever = new CommandRetriever(retrievalPairs(corpus, demos));
  return { candidates: new CandidateSet(config.harvested, exploration, { retriever, perState }), retriever };
}

async function writeCheckpoint(paths: RunPaths, network: ScorerNetwork, optimizers: Record<string, tf.AdamOptimizer>, nextIteration: number, elapsedSec: number): Promise<void> {
  const saved: Record<string, SavedTensor[]> = {};
  for (const [key, optimizer] of Object.entries(optimizers)) saved[key] = await exportOptimizer(optimizer);
  saveCheckpoint(paths, { version: 1, nextIteration, weights: network.exportWeights(), optimizers: saved, elapsedSec });
}

function summarize(dir: string, config: RunConfig, candidates: number, corpusKept: number, metrics: readonly MetricRecord[]): TrainSummary {
  const evals = metrics.filter((m) => m.phase === 'eval');
  const retrieval = metrics.find((m) => m.phase === 'retrieval');
  const pg = metrics.filter((m) => m.phase === 'pg');
  return {
    run: dir,
    trainTasks: config.split.train.length,
    heldOutTasks: config.split.heldOut.length,
    candidates,
    nearDuplicates: { trainTasks: config.nearDuplicates?.trainTasks.length ?? 0, corpusRemoved: config.nearDuplicates?.corpus.length ?? 0, corpusKept },
    baseline: outcomeOf(metrics.find((m) => m.phase === 'baseline')),
    ...(retrieval ? { retrieval: outcomeOf(retrieval) } : {}),
    afterBc: outcomeOf(evals[0]),
    final: outcomeOf(evals.at(-1)),
    envStepsPerSec: pg.length ? pg.reduce((s, m) => s + (m.envStepsPerSec ?? 0), 0) / pg.length : 0,
    iterations: metrics.length,
    elapsedSec: metrics.at(-1)?.elapsedSec ?? 0,
  };
}
