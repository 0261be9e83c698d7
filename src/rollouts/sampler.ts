/**
 * Plays K samples of every task with an LLM strategy (InterCode's episode protocol, see
 * `playEpisode`) and hands each group's records over when its K episodes are done, with
 * the group's rewards and advantages filled in.
 */

import type { StepScoringRule, StrategyAgent, Strategy } from '../agents/index.js';
import type { Task } from '../datasets/index.js';
import { playEpisode, type EpisodeExecutor } from '../eval/index.js';
import { groupAdvantages } from './groups.js';
import { buildRecord, type RolloutRecord } from './record.js';

export interface SampleOptions {
  envName: string;
  /** The env's every-step rule (see EpisodeSettings.stepScoring). */
  stepScoring: StepScoringRule;
  /** The data file, as eval logs name it. */
  dataset: string;
  strategy: Strategy;
  model: string;
  tasks: readonly Task[];
  executor: EpisodeExecutor;
  /** The turn limit given to the strategy. */
  turns: number;
  /** Episodes per task (K). */
  samplesPerTask: number;
  /** Sample k of the task at position t gets seed `seed + t·K + k`. */
  seed: number;
  /** A task's position t for its seeds (default: its place in `tasks`); a resumed run passes the full list's, so seeds do not move. */
  positions?: (task: Task) => number;
  /** Recorded with each sample (the client sends it). */
  temperature: number;
  /** Divide advantages by the group's reward std (+1e-6); default: only mean-centred. */
  scaleAdvantages: boolean;
  /** Prefix of every session id (a run stamp). */
  stamp: string;
  /** Called with a group's K records (by sample index) as soon as its last episode ends. */
  onGroup: (records: RolloutRecord[]) => void | Promise<void>;
  /** Called after each episode with how many are done. */
  onEpisode?: (done: number, record: RolloutRecord) => void;
  signal?: AbortSignal;
  /** The policy version the trainer is at, recorded with each episode (see PolicyVersion). */
  policyVersion?: string | number | null;
}

interface Job {
  task: Task;
  position: number;
  sample: number;
}

/** @throws the first error an episode threw (ModelError, SandboxError…), after the episodes in flight settle. */
export async function sampleGroups(options: SampleOptions): Promise<void> {
  const K = options.samplesPerTask;
  const jobs: Job[] = options.tasks.flatMap((task, position) => Array.from({ length: K }, (_, sample) => ({ task, position, sample })));
  const pending = new Map<number, RolloutRecord[]>();
  let done = 0;
  await options.executor.forEach(
    jobs,
    async (env, job) => {
      const seed = options.seed + (options.positions?.(job.task) ?? job.position) * K + job.sample;
      let agent: StrategyAgent | undefined;
      const log = await playEpisode(env, options.strategy, job.task, { envName: options.envName, stepScoring: options.stepScoring, dataset: options.dataset, turns: options.turns, seed }, (a) => {
        agent = a;
      });
      const record = buildRecord({
        envName: options.envName,
        task: job.task,
        log,
        agent: agent!.record(),
        strategy: options.strategy,
        model: options.model,
        sample: { index: job.sample, seed, temperature: options.temperature },
        sessionId: `${options.stamp}-${job.task.id}-${job.sample}`,
        policyVersion: options.policyVersion ?? null,
      });
      options.onEpisode?.(++done, record);
      const group = pending.get(job.position) ?? new Array<RolloutRecord>(K);
      group[job.sample] = record;
      pending.set(job.position, group);
      if (group.filter(Boolean).length < K) return;
      pending.delete(job.position);
      const rewards = group.map((r) => r.reward);
      const stats = groupAdvantages(rewards, options.scaleAdvantages);
      for (const [k, r] of group.entries()) {
        r.group = { id: job.task.id, size: K, rewards, mean: stats.mean, std: stats.std, advantage: stats.advantages[k]!, scaled: options.scaleAdvantages };
      }
      await options.onGroup(group);
    },
    options.signal,
  );
}
