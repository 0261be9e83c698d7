import type { Command } from 'commander';
import { GoldPolicy, rollout } from '../policy/index.js';
import { describeEngine, EpisodeEngine, longestFirst } from '../engine/index.js';
import { commandEngines, releaseEngines } from './engine-flag.js';
import { addEpisodeEngineFlags, episodeEngineFlags, type EpisodeEngineFlags } from './engine-options.js';
import { addEnvFlags, selectEnvPlugin, type CommonEnvFlags } from './env-cli.js';
import { ENV_PLUGINS } from '../../envs/index.js';
import { Progress } from './progress.js';
import { isSolved } from '../scoring/solved.js';

/** A reward that counts as solved (InterCode's rewards are sums of rounded parts). */

interface RunFlags extends CommonEnvFlags, EpisodeEngineFlags {
  json?: boolean;
}

export interface TaskOutcome {
  index: number;
  query: string;
  reward: number;
  parts: Record<string, number>;
}

/**
 * `intercode run <env>`: the main job. Builds the images if missing, plays every task with
 * its gold command as the agent (reset, gold, submit) and prints each reward and a summary.
 * Episodes go through the {@link EpisodeEngine} (a warm pool restored in place by default),
 * the tasks whose golds took longest when verified first.
 */
export function registerRunCommand(program: Command): void {
  const command = program
    .command('run')
    .argument('<env>', `environment: ${ENV_PLUGINS.map((c) => c.name).join(', ')}`)
    .description('play every task of a dataset with its gold command as the agent (those whose golds took longest when verified first); print each reward, in task order, and a summary')
    .option(
      '--json',
      'print one JSON object: {"episodes","solved","successRate","meanReward","elapsedSec","setupSec","episodesPerSec","parallel","sandboxes",' +
        '"tasks":[{"index","reward","parts"}]}, ' +
        'with several --engine also "engines":[{"endpoint","weight","up","live","created","downs"}]',
    );
  addEpisodeEngineFlags(addEnvFlags(command, ENV_PLUGINS)).action(async (envName: string, flags: RunFlags, self: Command) => {
    const started = performance.now();
    const plugin = selectEnvPlugin(ENV_PLUGINS, '<env>', envName, self);
    const { parallel, sandboxes, keepWarmMs } = episodeEngineFlags(flags, plugin.defaultParallel?.(flags as typeof flags & Record<string, unknown>));
    const log = (line: string) => process.stderr.write(`${line}\n`);
    const engines = commandEngines(flags, log);
    const envs = await plugin.createEnvs(flags as RunFlags & Record<string, unknown>, parallel, { purpose: 'run', log, engines });
    // No more envs (and pooled sandboxes) than tasks: the rest would only be set up and removed.
    const used = envs.slice(0, Math.max(1, Math.min(envs.length, envs[0]!.tasks.length)));
    await Promise.all(envs.slice(used.length).map((env) => env.close()));
    const engine = new EpisodeEngine(used, { sandboxes, keepWarmMs });
    log(describeEngine(engine));
    const tasks = envs[0]!.tasks;
    const gold = new GoldPolicy((context) => plugin.goldActions(context.task));
    const outcomes: TaskOutcome[] = [];
    const progress = new Progress('tasks', tasks.length);
    let finished = 0;
    let solvedSoFar = 0;
    let ended: number;
    try {
      // Longest golds first (as measured when they were verified): a long one left for last
      // would run alone while the other envs sit idle.
      const durations = await Promise.all(tasks.map((task) => used[0]!.goldDurationMs?.(task)));
      await engine.forEach(
        longestFirst(
          tasks.map((task, index) => ({ task, index })),
          ({ index }) => durations[index],
        ),
        async (env, { task, index }) => {
          const played = await rollout(env, gold, { envName: plugin.name, task, turnLimit: 20 });
          const end = { reward: played.reward, info: played.turns.at(-1)?.info };
          outcomes[index] = { index, query: task.query, reward: end.reward, parts: end.info?.score?.parts ?? {} };
          if (isSolved(end.reward)) solvedSoFar += 1;
          progress.update(++finished, `solved ${solvedSoFar}`);
        },
      );
    } finally {
      ended = performance.now();
      progress.stop();
      await engine.close();
      releaseEngines(engines, log);
    }
    const firstEpisode = engine.firstEpisodeAt ?? ended;
    const solved = outcomes.filter((o) => isSolved(o.reward)).length;
    const summary = {
      episodes: outcomes.length,
      solved,
      successRate: solved / Math.max(1, outcomes.length),
      meanReward: outcomes.reduce((sum, o) => sum + o.reward, 0) / Math.max(1, outcomes.length),
      elapsedSec: (ended - started) / 1000,
      setupSec: (firstEpisode - started) / 1000,
      episodesPerSec: outcomes.length / Math.max(1e-6, (ended - firstEpisode) / 1000),
      parallel,
      sandboxes: engine.mode,
      ...(engines.status() ? { engines: engines.status() } : {}),
    };
    if (flags.json) {
      process.stdout.write(`${JSON.stringify({ ...summary, tasks: outcomes.map(({ index, reward, parts }) => ({ index, reward, parts })) })}\n`);
      return;
    }
    for (const o of outcomes) {
      const parts = Object.entries(o.parts).map(([k, v]) => `${k}=${v.toFixed(2)}`).join(' ');
      console.log(`#${String(o.index).padStart(3)}  reward ${o.reward.toFixed(2)}  ${parts}  ${o.query.slice(0, 70)}`);
    }
    console.log(
      `\n${summary.episodes} episodes, ${solved} scored 1.0 (${(summary.successRate * 100).toFixed(1)} %), ` +
        `mean reward ${summary.meanReward.toFixed(3)}, ${summary.elapsedSec.toFixed(1)} s ` +
        `(set-up ${summary.setupSec.toFixed(1)} s, then ${summary.episodesPerSec.toFixed(1)} episodes/s)`,
    );
  });
}
