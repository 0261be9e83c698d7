import { createStrategy } from '../agents/index.js';
import { ConfigError } from '../errors.js';
import { BranchingModel, formatRecord, parseRolloutFormat, RolloutFile, sampleBranchedGroups, sampleGroups, type RolloutRecord, type SampleOptions } from '../rollouts/index.js';
import { windDownOnSignal } from '../sandbox/lifecycle/shutdown.js';
import { commandSchedulerSettings, openCommandScheduler, type CommandScheduler } from './command-scheduler.js';
import type { SchedulerFlags } from './scheduler-flags.js';
import { experimentSettings, type CommonEnvFlags } from './env-cli.js';
import type { EnvPlugin } from '../../envs/index.js';
import { positiveInteger } from '../env/flag-values.js';
import { modelFromFlags, nonNegativeInteger, type ModelFlags } from './model-flags.js';
import { packageVersion } from './package-version.js';
import { Progress } from './progress.js';
import { isSolved } from '../scoring/solved.js';
import { countByReason, describeUnscored, meanOfScored, type Unscored } from '../policy/index.js';
import type { Task } from '../datasets/index.js';

/** The flags `collect --policy llm:MODEL` reads. */
export interface LlmCollectFlags extends CommonEnvFlags, ModelFlags, SchedulerFlags {
  env: string;
  policy: string;
  out: string;
  turnLimit: string;
  capacity: string;
  strategy: string;
  samplesPerTask: string;
  branchAt?: string;
  branches?: string;
  seed: string;
  scaleAdvantages?: boolean;
  format: string;
  dialogueLimit?: string;
  refineTurns: string;
  limit?: string;
  episodes?: string;
  json?: boolean;
}


/**
 * `collect --policy llm:MODEL`: K samples of each task with a prompting strategy, written as
 * each task's group completes, in `--format` (to a .jsonl file), or as transitions to a
 * replay-buffer folder (`--format jsonl` only).
 */
export async function collectWithLlm(plugin: EnvPlugin, flags: LlmCollectFlags, log: (line: string) => void): Promise<{ figures: Record<string, unknown>; tasks: readonly Task[] }> {
  const modelName = flags.policy.slice('llm:'.length);
  if (modelName === '') throw new ConfigError('--policy', 'llm: needs a model name, e.g. llm:gpt-4o-mini');
  if (flags.episodes !== undefined) throw new ConfigError('--episodes', 'is for gold, replay and checkpoint policies; with llm:… use --samples-per-task and --limit');
  const format = parseRolloutFormat(flags.format);
  const toFile = flags.out.endsWith('.jsonl');
  if (!toFile && format !== 'jsonl') throw new ConfigError('--out', `--format ${format} writes JSON Lines: give a path ending in .jsonl, got "${flags.out}"`);
  const engineSettings = commandSchedulerSettings(plugin, flags as LlmCollectFlags & Record<string, unknown>);
  const turns = positiveInteger('--turn-limit', flags.turnLimit);
  const branching = branchFlags(flags);
  if (branching && format !== 'jsonl') {
    throw new ConfigError('--format', `--branch-at writes rollout records (jsonl): a branch's token data leaves out the prefix it shares with sample 0, which ${format} lines cannot say`);
  }
  const samplesPerTask = branching?.branches ?? positiveInteger('--samples-per-task', flags.samplesPerTask);
  const seed = nonNegativeInteger('--seed', flags.seed);
  const refineTurns = nonNegativeInteger('--refine-turns', flags.refineTurns);
  const dialogueLimit = flags.dialogueLimit === undefined ? undefined : positiveInteger('--dialogue-limit', flags.dialogueLimit);
  const capacity = positiveInteger('--capacity', flags.capacity);
  const model = modelFromFlags(modelName, flags);
  // Branched groups: every model request goes through one wrapper that records sample 0's prefix and replays it to the branches.
  const branchingModel = branching ? new BranchingModel(model.client) : undefined;
  const strategy = createStrategy(flags.strategy, {
    model: branchingModel ?? model.client,
    prompt: plugin.agent.prompt,
    ...(model.prices ? { prices: model.prices } : {}),
    ...(dialogueLimit ? { dialogueLimit } : {}),
    refineTurns,
  });
  const limit = flags.limit === undefined ? undefined : positiveInteger('--limit', flags.limit);
  const settings = {
    ...experimentSettings(plugin, flags),
    model: modelName,
    strategy: strategy.name,
    turns,
    samplesPerTask,
    ...(branching ? { branchAt: branching.branchAt } : {}),
    seed,
    temperature: model.temperature,
    tokens: model.tokens,
    scaleAdvantages: flags.scaleAdvantages ?? false,
    format,
    dialogueLimit: dialogueLimit ?? null,
    refineTurns,
  };
  // The output is opened (and a resumed file checked against these settings) before any sandbox starts.
  const { ReplayBuffer } = await import('../../training/buffer/replay-buffer.js');
  const { demoTransitions } = await import('../../training/demos/demo-episode.js');
  const file = toFile ? RolloutFile.open(flags.out, settings, samplesPerTask) : undefined;
  const buffer = toFile ? undefined : ReplayBuffer.open(flags.out, { capacity }).buffer;
  let opened: CommandScheduler | undefined;
  let progress: Progress | undefined;
  const stop = new AbortController();
  const unregister = windDownOnSignal(() => {
    log('\nstopping: episodes in flight finish; groups not complete are not written; run the same command again to resume');
    stop.abort();
  });
  const stamp = Date.now().toString(36);
  const counts = { episodes: 0, written: 0, solved: 0, envSteps: 0, withIds: 0, withLogprobs: 0, groups: 0, branchedGroups: 0 };
  const rewards: { reward: number | null }[] = [];
  const unscored: Unscored[] = [];
  const started = performance.now();
  let chosen: readonly Task[] = [];
  try {
    opened = await openCommandScheduler(plugin, flags as LlmCollectFlags & Record<string, unknown>, engineSettings, 'collect', log);
    const executor = opened.scheduler;
    const all = opened.tasks;
    const limited = limit === undefined ? all : all.slice(0, limit);
    chosen = limited;
    const tasks = limited.filter((t) => !file?.done.has(t.id));
    if (file && file.resumed > 0) log(`resuming ${flags.out}: ${file.done.size} tasks (${file.resumed} episodes) done, ${tasks.length} to play`);
    const shown = (progress = new Progress('episodes', tasks.length * samplesPerTask));
    const sampling: SampleOptions = {
      envName: plugin.name,
      stepScoring: plugin.agent.stepScoring,
      dataset: flags.data ?? `(built-in ${plugin.name} tasks)`,
      strategy,
      model: modelName,
      tasks,
      positions: (task) => limited.indexOf(task),
      executor,
      turns,
      samplesPerTask,
      seed,
      temperature: model.temperature,
      scaleAdvantages: flags.scaleAdvantages ?? false,
      stamp,
      signal: stop.signal,
      onEpisode: (done, record: RolloutRecord) => {
        counts.episodes = done;
        if (record.not_scored) unscored.push(record.not_scored);
        else if (isSolved(record.reward)) counts.solved += 1;
        rewards.push({ reward: record.not_scored ? null : record.reward });
        counts.envSteps += record.actions.length;
        if (record.tokens.episode !== null) counts.withIds += 1;
        if (record.tokens.has_logprobs) counts.withLogprobs += 1;
        shown.update(done, `solved ${counts.solved}`);
      },
      onGroup: (records: RolloutRecord[]) => {
        counts.groups += 1;
        counts.written += records.length;
        if (file) file.append(records.map((r) => formatRecord(r, format, packageVersion())));
        else for (const r of records) buffer!.addMany(demoTransitions(r, r.session_id));
      },
    };
    if (branching && branchingModel) {
      await sampleBranchedGroups({
        ...sampling,
        branchAt: branching.branchAt,
        branchingModel,
        onBranch: (task, branched, reason) => {
          if (branched) counts.branchedGroups += 1;
          else log(`task ${task.id}: not branched (${reason}); its other samples were played from reset`);
        },
      });
    } else await sampleGroups(sampling);
  } finally {
    progress?.stop();
    unregister();
    buffer?.close();
    await opened?.scheduler.close();
    opened?.releaseEngines();
  }
  const elapsedSec = (performance.now() - started) / 1000;
  const n = Math.max(1, counts.episodes);
  const summary = {
    episodes: counts.episodes,
    written: counts.written,
    resumed: file?.resumed ?? 0,
    groups: counts.groups,
    solved: counts.solved,
    successRate: counts.solved / n,
    meanReward: meanOfScored(rewards),
    notScored: unscored.length,
    notScoredByReason: countByReason(unscored),
    envSteps: counts.envSteps,
    envStepsPerSec: counts.envSteps / elapsedSec,
    elapsedSec,
    withTokenIds: counts.withIds,
    withLogprobs: counts.withLogprobs,
    format,
    ...(branching ? { branchedGroups: counts.branchedGroups } : {}),
    out: flags.out,
  };
  if (flags.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
  else {
    console.log(
      `${counts.episodes} episodes in ${counts.groups} groups of ${samplesPerTask} (${counts.solved} solved, ${unscored.length > 0 ? `${describeUnscored(summary.notScoredByReason)}, ` : ''}` +
        `${summary.meanReward === null ? 'mean reward n/a (none scored)' : `mean reward ${summary.meanReward.toFixed(3)}${unscored.length > 0 ? ` of the ${counts.episodes - unscored.length} scored` : ''}`}), ` +
        `token ids in ${counts.withIds}, logprobs in ${counts.withLogprobs}; ${counts.written} written to ${flags.out} (${format})`,
    );
  }
  if (stop.signal.aborted) process.exitCode = 130;
  return { figures: summary, tasks: chosen };
}

/**
 * `--branch-at` and `--branches` (both or neither; not with `--samples-per-task`).
 * @throws ConfigError naming the flag.
 */
function branchFlags(flags: LlmCollectFlags): { branchAt: number; branches: number } | undefined {
  if (flags.branchAt === undefined && flags.branches === undefined) return undefined;
  if (flags.branchAt === undefined) throw new ConfigError('--branches', 'needs --branch-at STEP (the env step after which the samples branch)');
  if (flags.branches === undefined) throw new ConfigError('--branch-at', 'needs --branches K (the samples per task)');
  if (flags.samplesPerTask !== '1') throw new ConfigError('--samples-per-task', 'is not for branched groups: --branches K gives the samples per task');
  const branches = positiveInteger('--branches', flags.branches);
  if (branches < 2) throw new ConfigError('--branches', `must be at least 2 (sample 0 and a branch), got "${flags.branches}"`);
  return { branchAt: positiveInteger('--branch-at', flags.branchAt), branches };
}
