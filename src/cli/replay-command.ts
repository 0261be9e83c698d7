import type { Command } from 'commander';
import { describeScheduler, parseSandboxMode } from '../scheduler/index.js';
import { ConfigError, oneOf } from '../errors.js';
import { detectProtocol, replayTrajectories, type RecordingProtocol, type ReplayReport } from '../replay/replay.js';
import { QUERY_MISMATCH_POLICIES } from '../replay/task-match.js';
import { readRecordedTrajectories } from '../trajectory/index.js';
import { openCommandScheduler } from './command-scheduler.js';
import { addEnvFlags, selectEnvPlugin, type CommonEnvFlags } from './env-cli.js';
import { positiveInteger } from '../env/flag-values.js';
import { ENV_PLUGINS } from '../../envs/index.js';
import { Progress } from './progress.js';
import { nonNegativeInteger } from './model-flags.js';
import { resolve } from 'node:path';
import { addRunDirFlag, announceRunFolder, datasetFacts, engineFacts, openRunFolder, writeRunResult } from './run-folder.js';

interface ReplayFlags extends CommonEnvFlags {
  env: string;
  sandboxes: string;
  parallel: string;
  json?: boolean;
  runDir?: string;
  show: string;
  protocol: string;
  onQueryMismatch: string;
}

const pct = (x: number) => `${(x * 100).toFixed(1)} %`;

function printReport(report: ReplayReport, show: number): void {
  console.log(`episodes            ${report.episodes}`);
  console.log(`steps               ${report.steps}`);
  console.log(`agreeing steps      ${report.agreeingSteps} (${pct(report.agreement)}, |Δreward| ≤ 0.01)`);
  console.log(`same observation    ${report.sameObservationSteps} steps`);
  console.log(`success rate        ${pct(report.successRate)} (recorded: ${pct(report.recordedSuccessRate)})`);
  const { noCode, blocked } = report.notExecuted;
  if (noCode + blocked > 0) console.log(`not executed        ${noCode} turns without code, ${blocked} blocked (never run by InterCode either; not in steps)`);
  for (const m of report.queryMismatches) {
    const data = m.dataQuery === null ? 'no task at that index' : `data file: ${JSON.stringify(m.dataQuery.slice(0, 100))}`;
    console.log(`query mismatch      episode ${m.taskIndex} ${m.handling}: recorded ${JSON.stringify(m.recordedQuery.slice(0, 100))}, ${data}`);
  }
  if (report.disagreements.length === 0) return;
  console.log(`\nsteps that disagree (${report.disagreements.length}; first ${Math.min(show, report.disagreements.length)}):`);
  for (const s of report.disagreements.slice(0, show)) {
    const parts = Object.entries(s.parts).map(([k, v]) => `${k}=${v}`).join(' ');
    console.log(`  task ${s.taskIndex} step ${s.step}: recorded ${s.recordedReward}, now ${s.reward} (${parts})`);
    console.log(`    action: ${s.action.slice(0, 160)}`);
    if (s.observation !== s.recordedObservation) {
      console.log(`    observation now:      ${JSON.stringify(s.observation.slice(0, 160))}`);
      console.log(`    observation recorded: ${JSON.stringify((s.recordedObservation ?? '').slice(0, 160))}`);
    }
  }
}

/** `intercode replay`: re-executes recorded InterCode trajectories and compares per-step rewards. */
export function registerReplayCommand(program: Command): void {
  const command = program
    .command('replay')
    .argument('<trajectory>', 'a recorded InterCode evaluation file (JSON keyed by task index)')
    .description(
      're-execute a recorded trajectory, scoring after every action as if submitted then (no reset in between, ' +
        "as InterCode's logs were made), and compare with the recorded rewards",
    )
    .requiredOption('--env <env>', `environment: ${ENV_PLUGINS.map((c) => c.name).join(', ')}`)
    .option('--parallel <n>', 'episodes in flight', '4')
    .option('--show <n>', 'how many disagreeing steps to list', '40')
    .option(
      '--protocol <p>',
      'how the file was recorded: every-step (Try Again, Plan & Solve: scored after every action), ' +
        'on-submit (ReAct: execute[…] actions, only submit scored), def-submit (Python: each def action submitted by its name), ' +
        'or auto (detected from the actions and the recorded environment)',
      'auto',
    )
    .option(
      '--on-query-mismatch <policy>',
      "when a recorded episode's query is not the data file's at its index (a recording made against another version of the task file): " +
        'fail (stop before replaying, naming the episodes), skip (leave them out), or trust-recording (replay them against the ' +
        "data file's task at that index: its gold, files and setup)",
      'fail',
    )
    .option(
      '--json',
      'print one JSON object: {"episodes","steps","agreeingSteps","agreement","successRate","recordedSuccessRate",' +
        '"notExecuted":{"noCode","blocked"},"queryMismatches":[{"taskIndex","recordedQuery","dataQuery","foundAt","handling"}]}',
    );
  addRunDirFlag(command, 'the report');
  addEnvFlags(command, ENV_PLUGINS)
    .option('--sandboxes <mode>', 'pooled (default: with --reset exact, a warm pool restored in place; InterCode\'s lifecycle keeps its own sandboxes) or fresh', 'pooled')
    .action(async (file: string, flags: ReplayFlags, self: Command) => {
    const startedAt = new Date();
    const log = (line: string) => process.stderr.write(`${line}\n`);
    const plugin = selectEnvPlugin(ENV_PLUGINS, '--env', flags.env, self);
    const parallel = positiveInteger('--parallel', flags.parallel);
    const sandboxes = parseSandboxMode(flags.sandboxes);
    const show = nonNegativeInteger('--show', flags.show);
    if (!['auto', 'every-step', 'on-submit', 'def-submit'].includes(flags.protocol)) {
      throw new ConfigError('--protocol', `must be auto, every-step, on-submit or def-submit, got "${flags.protocol}"`);
    }
    const onQueryMismatch = oneOf('--on-query-mismatch', flags.onQueryMismatch, QUERY_MISMATCH_POLICIES);
    const episodes = await readRecordedTrajectories(file);
    const protocol = flags.protocol === 'auto' ? detectProtocol(episodes) : (flags.protocol as RecordingProtocol);
    log(`recording protocol: ${protocol}`);
    const runDir = openRunFolder('replay', flags.runDir);
    // Replay steps and scores the envs itself; bound to the scheduler, they take pooled sandboxes when they can share them.
    const opened = await openCommandScheduler(plugin, flags as ReplayFlags & Record<string, unknown>, { parallel: Math.min(parallel, episodes.length), sandboxes, keepWarmMs: 0, threads: 1 }, 'replay', log, { recording: episodes });
    const { scheduler } = opened;
    const envs = scheduler.envs;
    const progress = new Progress('episodes', episodes.length);
    let report: ReplayReport;
    try {
      report = await replayTrajectories({
        protocol,
        envs,
        tasks: envs[0]!.tasks,
        episodes,
        onQueryMismatch,
        file,
        onEpisode: (done) => progress.update(done),
        ...(plugin.agent.reactCommand ? { reactCommand: (action: string) => plugin.agent.reactCommand!(action) } : {}),
      });
    } finally {
      progress.stop();
      await scheduler.close();
      opened.releaseEngines();
    }
    const { episodes: n, steps, agreeingSteps, agreement, successRate, recordedSuccessRate, notExecuted, queryMismatches } = report;
    const figures = { episodes: n, steps, agreeingSteps, agreement, successRate, recordedSuccessRate, notExecuted, queryMismatches };
    writeRunResult(runDir, { command: 'replay', startedAt, figures, dataset: datasetFacts(flags.data, envs[0]!.tasks), engine: { ...engineFacts(flags), episodes: describeScheduler(scheduler), protocol }, files: { recording: resolve(file) } });
    if (flags.json) process.stdout.write(`${JSON.stringify(figures)}\n`);
    else printReport(report, show);
    announceRunFolder(runDir, flags.json);
  });
}
