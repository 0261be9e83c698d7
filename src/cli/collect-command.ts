import type { Command } from 'commander';
import { appendFileSync, writeFileSync } from 'node:fs';
import { addThreadsFlag, commandSchedulerSettings, openCommandScheduler, threadCount, type ThreadsFlags } from './command-scheduler.js';
import { addEnvFlags, selectEnvPlugin, type CommonEnvFlags } from './env-cli.js';
import { positiveInteger } from '../env/flag-values.js';
import { ENV_PLUGINS, envPlugin } from '../../envs/index.js';
import { Progress } from './progress.js';
import { ConfigError } from '../errors.js';
import { addSchedulerFlags, type SchedulerFlags } from './scheduler-flags.js';
import { STRATEGIES } from '../agents/index.js';
import { ROLLOUT_FORMATS } from '../rollouts/index.js';
import { collectWithLlm, type LlmCollectFlags } from './collect-llm.js';
import { addModelFlags } from './model-flags.js';
import { isSolved } from '../scoring/solved.js';
import { countByReason, describeUnscored, meanOfScored, unscoredRollout, type Unscored } from '../policy/index.js';
import type { Task } from '../datasets/index.js';
import { join, resolve } from 'node:path';
import { addRunDirFlag, announceRunFolder, datasetFacts, engineFacts, openRunFolder, writeRunResult } from './run-folder.js';

interface CollectFlags extends CommonEnvFlags, SchedulerFlags, ThreadsFlags {
  env: string;
  policy: string;
  episodes?: string;
  out?: string;
  runDir?: string;
  turnLimit: string;
  capacity: string;
  format: string;
  samplesPerTask: string;
  branchAt?: string;
  branches?: string;
  json?: boolean;
}

/**
 * `intercode collect`: plays a policy in parallel envs and writes each episode as a
 * demonstration, to JSON Lines (`--out x.jsonl`) or a replay-buffer folder (any other path).
 */
export function registerCollectCommand(program: Command): void {
  const command = program
    .command('collect')
    .description('play a policy in parallel envs and save the episodes as demonstrations (JSONL, or a replay-buffer folder); llm:MODEL writes rollouts for RL (groups of samples, server tokens; jsonl, hf-messages or ATIF)')
    .requiredOption('--env <name>', `environment: ${ENV_PLUGINS.map((c) => c.name).join(', ')}`)
    .option('--policy <spec>', 'gold, replay:FILE (JSONL or buffer folder), checkpoint:RUN (a trained run), or llm:MODEL (a prompting strategy against an OpenAI-compatible server)', 'gold')
    .option('--episodes <n>', 'episodes to play, cycling through the tasks (default: one per task)')
    .option('--out <path>', 'a .jsonl file (one episode per line), or a folder for an append-only replay buffer (default: the run folder\'s episodes.jsonl, llm: rollouts.jsonl)')
    .option('--turn-limit <n>', 'actions per episode before a submit is forced (llm: the strategy\'s turn limit, eval\'s --turns)', '10')
    .option('--capacity <n>', 'transitions a replay-buffer folder keeps (oldest evicted)', '1000000')
    .option('--strategy <name>', `llm: prompting strategy: ${Object.keys(STRATEGIES).join(', ')}`, 'tools')
    .option('--samples-per-task <k>', 'llm: episodes per task, one group (seeds seed+t·K+k; rewards and advantages recorded per group)', '1')
    .option('--branch-at <step>', 'llm: play each group\'s prefix once: sample 0 plays, and at its first model request after this env step the episode is forked into the other samples (needs --branches)')
    .option('--branches <k>', 'llm, with --branch-at: samples per task, branched from sample 0 (instead of --samples-per-task)')
    .option('--seed <n>', 'llm: first sampling seed', '0')
    .option('--scale-advantages', 'llm: divide group advantages by the group reward std (+1e-6); default: mean-centred only')
    .option('--format <f>', `llm: ${ROLLOUT_FORMATS.join(', ')} (rollout records, Hugging Face messages, ATIF v1.4), one episode per line`, 'jsonl')
    .option('--limit <n>', 'llm: only the first n tasks')
    .option('--dialogue-limit <n>', 'llm: keep only the n most recent messages after the opening ones (default: all)')
    .option('--refine-turns <n>', 'llm, plan-solve: refinement turns after a plan that did not solve the task', '0')
    .option(
      '--json',
      'print one JSON object: {"episodes","solved","successRate","meanReward","envSteps","envStepsPerSec","elapsedSec","out"} ' +
        '(llm: also "written","resumed","groups","withTokenIds","withLogprobs","format"; with --branch-at: "branchedGroups")',
    );
  addModelFlags(command, '1');
  addRunDirFlag(command, 'the episodes (unless --out says where)');
  addThreadsFlag(command);
  addSchedulerFlags(addEnvFlags(command, ENV_PLUGINS)).action(async (flags: CollectFlags, self: Command) => {
    const plugin = selectEnvPlugin(ENV_PLUGINS, '--env', flags.env, self);
    const startedAt = new Date();
    const llm = flags.policy.startsWith('llm:');
    if (llm && threadCount(flags) !== 1) throw new ConfigError('--threads', 'steps the envs of a --policy gold, replay: or checkpoint: collect; an llm: policy waits on its model, not on the main thread: use --parallel');
    const runDir = openRunFolder('collect', flags.runDir);
    const out = flags.out ?? join(runDir, llm ? 'rollouts.jsonl' : 'episodes.jsonl');
    const finish = (figures: Record<string, unknown>, tasks: readonly Task[]) => {
      writeRunResult(runDir, { command: 'collect', startedAt, figures, dataset: datasetFacts(flags.data, tasks), engine: engineFacts(flags), files: { out: resolve(out) } });
      announceRunFolder(runDir, flags.json);
    };
    if (llm) {
      const { figures, tasks } = await collectWithLlm(plugin, { ...flags, out } as unknown as LlmCollectFlags, (line) => process.stderr.write(`${line}\n`));
      return finish(figures, tasks);
    }
    for (const [flag, given] of [['--format', flags.format !== 'jsonl'], ['--samples-per-task', flags.samplesPerTask !== '1'], ['--branch-at', flags.branchAt !== undefined], ['--branches', flags.branches !== undefined]] as const) {
      if (given) throw new ConfigError(flag, `needs --policy llm:MODEL (the ${flags.policy} policy writes demonstrations: a .jsonl file or a replay-buffer folder)`);
    }
    const engineSettings = commandSchedulerSettings(plugin, flags as CollectFlags & Record<string, unknown>);
    const turnLimit = positiveInteger('--turn-limit', flags.turnLimit);
    const capacity = positiveInteger('--capacity', flags.capacity);
    const log = (line: string) => process.stderr.write(`${line}\n`);
    const { resolvePolicy } = await import('../../training/run/policy-spec.js');
    const { demoFromRollout, demoTransitions, formatDemoLine } = await import('../../training/demos/demo-episode.js');
    const { ReplayBuffer } = await import('../../training/buffer/replay-buffer.js');
    const { VecEpisodeRunner } = await import('../../training/loops/episode-runner.js');
    const resolved = await resolvePolicy(flags.policy, (task) => plugin.goldActions(task), (env) => envPlugin(env, '--policy').training.exploration, log);
    const { scheduler, releaseEngines } = await openCommandScheduler(plugin, flags as CollectFlags & Record<string, unknown>, engineSettings, 'collect', log);
    const runner = new VecEpisodeRunner(plugin.name, scheduler.vec, log);
    const tasks = runner.tasks.filter(resolved.covers);
    const toJsonl = out.endsWith('.jsonl');
    const buffer = toJsonl ? undefined : ReplayBuffer.open(out, { capacity }).buffer;
    try {
      if (tasks.length === 0) throw new ConfigError('--policy', `covers none of the ${runner.tasks.length} tasks`);
      const episodes = flags.episodes === undefined ? tasks.length : positiveInteger('--episodes', flags.episodes);
      if (toJsonl) writeFileSync(out, '');
      const progress = new Progress('episodes', episodes);
      const stamp = Date.now().toString(36);
      let solved = 0;
      const rewards: { reward: number | null }[] = [];
      const unscored: Unscored[] = [];
      let envSteps = 0;
      const started = performance.now();
      await runner.play(
        Array.from({ length: episodes }, (_, i) => ({ task: tasks[i % tasks.length]!, policy: resolved.policy })),
        {
          turnLimit,
          onEpisode: (done, played) => {
            const demo = demoFromRollout(plugin.name, played, resolved.policy.name);
            if (toJsonl) appendFileSync(out, `${formatDemoLine(demo)}\n`);
            else buffer!.addMany(demoTransitions(demo, `${stamp}-${done}`));
            const cut = unscoredRollout(played);
            if (cut) unscored.push(cut);
            else if (isSolved(played.reward)) solved += 1;
            rewards.push({ reward: cut ? null : played.reward });
            envSteps += played.turns.length;
            progress.update(done, `solved ${solved}`);
          },
        },
      );
      progress.stop();
      const elapsedSec = (performance.now() - started) / 1000;
      const notScoredByReason = countByReason(unscored);
      const summary = { episodes, solved, successRate: solved / episodes, meanReward: meanOfScored(rewards), notScored: unscored.length, notScoredByReason, envSteps, envStepsPerSec: envSteps / elapsedSec, elapsedSec, out };
      const mean = summary.meanReward === null ? 'mean reward n/a (none scored)' : `mean reward ${summary.meanReward.toFixed(3)}${unscored.length > 0 ? ` of the ${episodes - unscored.length} scored` : ''}`;
      if (flags.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
      else console.log(`${episodes} episodes (${solved} solved, ${unscored.length > 0 ? `${describeUnscored(notScoredByReason)}, ` : ''}${mean}), ${envSteps} env steps at ${summary.envStepsPerSec.toFixed(1)}/s, written to ${out}`);
      finish(summary, tasks);
    } finally {
      buffer?.close();
      await runner.close();
      releaseEngines();
    }
  });
}
