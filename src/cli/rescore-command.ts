import type { Command } from 'commander';
import { describeScheduler, parseSandboxMode } from '../scheduler/index.js';
import type { Unscored } from '../policy/index.js';
import { rescoreEpisodes, type RescoreReport } from '../replay/rescore.js';
import { readEpisodeTurns } from '../rollouts/index.js';
import { resolve } from 'node:path';
import { addRunDirFlag, announceRunFolder, datasetFacts, engineFacts, openRunFolder, writeRunResult } from './run-folder.js';
import { openCommandScheduler } from './command-scheduler.js';
import { addEnvFlags, selectEnvPlugin, type CommonEnvFlags } from './env-cli.js';
import { positiveInteger } from '../env/flag-values.js';
import { ENV_PLUGINS } from '../../envs/index.js';
import { nonNegativeInteger } from './model-flags.js';
import { Progress } from './progress.js';

interface RescoreFlags extends CommonEnvFlags {
  env: string;
  parallel: string;
  sandboxes: string;
  show: string;
  json?: boolean;
  runDir?: string;
}

const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
const partsText = (parts: Record<string, number> | null) => (parts === null ? '(not recorded)' : Object.entries(parts).map(([k, v]) => `${k}=${v}`).join(' ') || '(none)');
/** `0.915`; `1.000 of the 2 scored` when some were not scored; `n/a (none scored)`. */
const meanText = (mean: number | null, notScored: number, episodes: number) =>
  mean === null ? 'n/a (none scored)' : `${mean.toFixed(3)}${notScored > 0 ? ` of the ${episodes - notScored} scored` : ''}`;
/** `2 (reward-invalid 1, reward-missing 1)`; `0`. */
const countsText = (n: number, byReason: Record<string, number>) => (n === 0 ? '0' : `${n} (${Object.entries(byReason).map(([reason, k]) => `${reason} ${k}`).join(', ')})`);
/** One side of a disagreement: `0.5 (parts)`, or `not scored: REASON — MESSAGE`. */
const sideText = (reward: number | null, parts: Record<string, number> | null, notScored: Unscored | null) =>
  notScored !== null ? `not scored: ${notScored.reason} — ${notScored.message}` : `${reward} (${partsText(parts)})`;

function printReport(report: RescoreReport, show: number): void {
  console.log(`episodes            ${report.episodes}`);
  console.log(`agreeing episodes   ${report.agreeingEpisodes} (${pct(report.agreement)}: |Δreward| ≤ 0.01 and the same reward components where recorded, or both not scored for the same reason)`);
  console.log(`with components     ${report.withComponents}`);
  console.log(`mean reward         ${meanText(report.meanReward, report.notScored, report.episodes)} (recorded: ${meanText(report.recordedMeanReward, report.recordedNotScored, report.episodes)})`);
  if (report.notScored + report.recordedNotScored > 0) {
    console.log(`not scored          ${countsText(report.notScored, report.notScoredByReason)}; recorded: ${countsText(report.recordedNotScored, report.recordedNotScoredByReason)}`);
  }
  if (report.disagreements.length === 0) return;
  console.log(`\nepisodes that disagree (${report.disagreements.length}; first ${Math.min(show, report.disagreements.length)}):`);
  for (const e of report.disagreements.slice(0, show)) {
    const what = `recorded ${sideText(e.recordedReward, e.recordedComponents, e.recordedNotScored)}, now ${sideText(e.reward, e.components, e.notScored)}`;
    console.log(`  task ${e.taskIndex} sample ${e.sampleIndex}${e.sessionId ? ` (${e.sessionId})` : ''}: ${what}`);
  }
}

/** `intercode rescore FILE`: replays stored rollouts in new sandboxes and reports how many rewards agree. */
export function registerRescoreCommand(program: Command): void {
  const command = program
    .command('rescore')
    .argument('<rollouts>', 'a rollout file: collect --policy llm:… output in any --format (jsonl, hf-messages, atif), or POST /rollouts records, one per line')
    .description(
      "recompute the rewards of stored rollouts: each episode's actions are played again in a new sandbox and scored as its strategy scored them; " +
        'reports how many episodes get the same reward and named reward components (NeMo Gym\'s reverify)',
    )
    .requiredOption('--env <env>', `environment: ${ENV_PLUGINS.map((c) => c.name).join(', ')}`)
    .option('--parallel <n>', 'episodes at once', '4')
    .option('--show <n>', 'how many disagreeing episodes to list', '20')
    .option('--json', 'print one JSON object: {"episodes","agreeingEpisodes","agreement","withComponents","recordedMeanReward","meanReward","notScored","notScoredByReason","recordedNotScored","recordedNotScoredByReason",' +
        '"disagreements":[{"sessionId","taskIndex","sampleIndex","recordedReward","reward","recordedComponents","components","recordedNotScored","notScored","agrees"}]}; ' +
        'a replay that ends truncated, or a line that says not_scored, has reward null and {"reason","message"}, and is left out of its mean reward (null when none was scored)');
  addRunDirFlag(command, 'the report');
  addEnvFlags(command, ENV_PLUGINS)
    .option('--sandboxes <mode>', 'pooled (a warm pool restored in place) or fresh (a new sandbox per episode)', 'pooled')
    .action(async (file: string, flags: RescoreFlags, self: Command) => {
      const startedAt = new Date();
      const log = (line: string) => process.stderr.write(`${line}\n`);
      const plugin = selectEnvPlugin(ENV_PLUGINS, '--env', flags.env, self);
      const parallel = positiveInteger('--parallel', flags.parallel);
      const sandboxes = parseSandboxMode(flags.sandboxes);
      const show = nonNegativeInteger('--show', flags.show);
      const episodes = readEpisodeTurns(file);
      const runDir = openRunFolder('rescore', flags.runDir);
      // The envs `collect` and `serve` make (not replay's InterCode-compatible ones): the rollouts were played there.
      const opened = await openCommandScheduler(plugin, flags as RescoreFlags & Record<string, unknown>, { parallel: Math.min(parallel, episodes.length), sandboxes, keepWarmMs: 0, threads: 1 }, 'collect', log);
      const { scheduler, tasks } = opened;
      const progress = new Progress('episodes', episodes.length);
      let report: RescoreReport;
      try {
        report = await rescoreEpisodes(scheduler, { name: plugin.name, ...plugin.agent }, tasks, episodes, (done) => progress.update(done));
      } finally {
        progress.stop();
        await scheduler.close();
        opened.releaseEngines();
      }
      writeRunResult(runDir, { command: 'rescore', startedAt, figures: report, dataset: datasetFacts(flags.data, tasks), engine: { ...engineFacts(flags), episodes: describeScheduler(scheduler) }, files: { rollouts: resolve(file) } });
      if (flags.json) process.stdout.write(`${JSON.stringify(report)}\n`);
      else printReport(report, show);
      announceRunFolder(runDir, flags.json);
    });
}
