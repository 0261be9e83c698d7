import type { Command } from 'commander';
import { countByReason, describeUnscored, GoldPolicy, meanOfScored, rollout, unscoredRollout, type Unscored } from '../policy/index.js';
import { describeScheduler, longestFirst } from '../scheduler/index.js';
import { addThreadsFlag, commandSchedulerSettings, openCommandScheduler, type ThreadsFlags } from './command-scheduler.js';
import { addSchedulerFlags, type SchedulerFlags } from './scheduler-flags.js';
import { addEnvFlags, selectEnvPlugin, type CommonEnvFlags } from './env-cli.js';
import { ENV_PLUGINS } from '../../envs/index.js';
import { Progress } from './progress.js';
import { isSolved } from '../scoring/solved.js';
import { join } from 'node:path';
import { printable } from './error-boundary.js';
import { ALLOW_FAILING_GOLDS, checkGolds } from './gold-check.js';
import { addRunDirFlag, announceRunFolder, datasetFacts, engineFacts, openRunFolder, writeRunResult } from './run-folder.js';

interface RunFlags extends CommonEnvFlags, SchedulerFlags, ThreadsFlags {
  json?: boolean;
  allowFailingGolds?: boolean;
  runDir?: string;
}

/** A task's query on one line of `run`'s listing (a Harbor instruction is a whole Markdown file), cut to `width`. */
export function queryLine(query: string, width = 70): string {
  const line = printable(query.replace(/\s+/g, ' ').trim());
  return line.length > width ? `${line.slice(0, width - 1)}…` : line;
}

export interface TaskOutcome {
  index: number;
  query: string;
  /** null: the episode was not scored (it ended truncated; `truncation` says why). */
  reward: number | null;
  parts: Record<string, number>;
  truncation?: Unscored;
}

/**
 * `intercode run <env>`: the main job. Builds the images if missing, plays every task with
 * its gold command as the agent (reset, gold, submit) and prints each reward and a summary.
 * Episodes go through the {@link EpisodeScheduler} (a warm pool restored in place by default),
 * the tasks whose golds took longest when verified first.
 */
export function registerRunCommand(program: Command): void {
  const command = program
    .command('run')
    .argument('<env>', `environment: ${ENV_PLUGINS.map((c) => c.name).join(', ')}`)
    .description('play every task of a dataset with its gold command as the agent (those whose golds took longest when verified first); print each reward, in task order, and a summary')
    .option(
      '--json',
      'print one JSON object: {"episodes","solved","successRate","meanReward","elapsedSec","setupSec","episodesPerSec","parallel","threads" (with --threads above 1),"sandboxes","sandboxKind" (episode-roots, containers, pods, or none where the env used no engine; left out with --threads: each thread\'s engines decide),' +
        '"notScored","notScoredByReason","tasks":[{"index","reward","parts"}]}; an episode that ended truncated (its verifier gave no reward, the sandbox was lost…) ' +
        'has "reward":null and "truncation":{"reason","message"}, and is left out of meanReward (null when none was scored); ' +
        'with several --engine also "engines":[{"endpoint","weight","up","live","created","downs"}]',
    )
    .option(
      ALLOW_FAILING_GOLDS,
      'exit 0 whatever the golds score (deliberate measurement); without it, fewer than half of the scored golds scoring 1 ends with a line saying which dataset/env mismatch is likely, exit 1',
    );
  addRunDirFlag(command, 'trajectories/ (an InterCode log per episode, unless --trajectories says where)');
  addThreadsFlag(command);
  addSchedulerFlags(addEnvFlags(command, ENV_PLUGINS)).action(async (envName: string, flags: RunFlags, self: Command) => {
    const started = performance.now();
    const startedAt = new Date();
    const plugin = selectEnvPlugin(ENV_PLUGINS, '<env>', envName, self);
    const settings = commandSchedulerSettings(plugin, flags as RunFlags & Record<string, unknown>);
    const runDir = openRunFolder('run', flags.runDir);
    flags.trajectories ??= join(runDir, 'trajectories');
    const log = (line: string) => process.stderr.write(`${line}\n`);
    const opened = await openCommandScheduler(plugin, flags as RunFlags & Record<string, unknown>, settings, 'run', log, { atMostOnePerTask: true });
    const { scheduler, tasks } = opened;
    const gold = new GoldPolicy((context) => plugin.goldActions(context.task));
    const outcomes: TaskOutcome[] = [];
    const progress = new Progress('tasks', tasks.length);
    let finished = 0;
    let solvedSoFar = 0;
    let ended: number;
    try {
      // Longest golds first (as measured when they were verified): a long one left for last
      // would run alone while the other envs sit idle.
      const durations = await Promise.all(tasks.map((task) => scheduler.envs[0]!.goldDurationMs?.(task)));
      await scheduler.forEach(
        longestFirst(
          tasks.map((task, index) => ({ task, index })),
          ({ index }) => durations[index],
        ),
        async (env, { task, index }) => {
          const played = await rollout(env, gold, { envName: plugin.name, task, turnLimit: 20 });
          const truncation = unscoredRollout(played);
          outcomes[index] = truncation
            ? { index, query: task.query, reward: null, parts: {}, truncation }
            : { index, query: task.query, reward: played.reward, parts: played.turns.at(-1)?.info.score?.parts ?? {} };
          if (!truncation && isSolved(played.reward)) solvedSoFar += 1;
          progress.update(++finished, `solved ${solvedSoFar}`);
        },
      );
    } finally {
      ended = performance.now();
      progress.stop();
      await scheduler.close();
    }
    const sandboxKind = await opened.sandboxKind();
    const engineStatus = opened.engineStatus();
    opened.releaseEngines();
    const firstEpisode = scheduler.firstEpisodeAt ?? ended;
    const solved = outcomes.filter((o) => o.reward !== null && isSolved(o.reward)).length;
    const notScoredByReason = countByReason(outcomes.flatMap((o) => (o.truncation ? [o.truncation] : [])));
    const notScored = outcomes.filter((o) => o.truncation).length;
    const meanReward = meanOfScored(outcomes);
    const summary = {
      episodes: outcomes.length,
      solved,
      successRate: solved / Math.max(1, outcomes.length),
      meanReward,
      elapsedSec: (ended - started) / 1000,
      setupSec: (firstEpisode - started) / 1000,
      episodesPerSec: outcomes.length / Math.max(1e-6, (ended - firstEpisode) / 1000),
      parallel: settings.parallel,
      ...(settings.threads > 1 ? { threads: settings.threads } : {}),
      sandboxes: scheduler.mode,
      ...(sandboxKind ? { sandboxKind } : {}),
      notScored,
      notScoredByReason,
      ...(engineStatus ? { engines: engineStatus } : {}),
    };
    const figures = { ...summary, tasks: outcomes.map(({ index, reward, parts, truncation }) => ({ index, reward, parts, ...(truncation ? { truncation } : {}) })) };
    writeRunResult(runDir, { command: 'run', startedAt, figures, dataset: datasetFacts(flags.data, tasks), engine: { ...engineFacts(flags), episodes: describeScheduler(scheduler) }, files: { trajectories: flags.trajectories } });
    if (flags.json) {
      process.stdout.write(`${JSON.stringify(figures)}\n`);
    } else {
      printOutcomes(outcomes, summary, notScoredByReason);
    }
    announceRunFolder(runDir, Boolean(flags.json));
    if (!flags.allowFailingGolds) checkGolds(plugin, ENV_PLUGINS, flags.data, solved, outcomes.length - notScored);
  });
}

/** The text listing: one line per task, in task order, then the summary. */
function printOutcomes(
  outcomes: readonly TaskOutcome[],
  summary: { episodes: number; successRate: number; meanReward: number | null; elapsedSec: number; setupSec: number; episodesPerSec: number; notScored: number; solved: number; sandboxKind?: string; threads?: number },
  notScoredByReason: Record<string, number>,
): void {
  const { notScored, meanReward, solved } = summary;
  for (const o of outcomes) {
    if (o.truncation) {
      console.log(`#${String(o.index).padStart(3)}  not scored: ${o.truncation.reason} — ${printable(o.truncation.message.replace(/\s+/g, ' '))}  ${queryLine(o.query)}`);
      continue;
    }
    const parts = Object.entries(o.parts).map(([k, v]) => `${k}=${v.toFixed(2)}`).join(' ');
    console.log(`#${String(o.index).padStart(3)}  reward ${o.reward!.toFixed(2)}  ${parts}  ${queryLine(o.query)}`);
  }
  const mean = meanReward === null ? 'mean reward n/a (none scored)' : `mean reward ${meanReward.toFixed(3)}${notScored > 0 ? ` of the ${outcomes.length - notScored} scored` : ''}`;
  console.log(
    `\n${summary.episodes} episodes, ${solved} scored 1.0 (${(summary.successRate * 100).toFixed(1)} %), ` +
      `${notScored > 0 ? `${describeUnscored(notScoredByReason)}, ` : ''}${mean}, ${summary.elapsedSec.toFixed(1)} s ` +
      `(set-up ${summary.setupSec.toFixed(1)} s, then ${summary.episodesPerSec.toFixed(1)} episodes/s; ${summary.sandboxKind ? `sandboxes: ${summary.sandboxKind.replace('-', ' ')}` : `in ${summary.threads} threads`})`,
  );
}
