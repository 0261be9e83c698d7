import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../errors.js';
import { addSchedulerFlags, schedulerFlags, type SchedulerFlags } from './scheduler-flags.js';
import { addThreadsFlag, openCommandScheduler, threadCount, type ThreadsFlags } from './command-scheduler.js';
import { addEnvFlags, selectEnvPlugin, type CommonEnvFlags } from './env-cli.js';
import { positiveInteger } from '../env/flag-values.js';
import { ENV_PLUGINS } from '../../envs/index.js';
import { Progress } from './progress.js';
import { addRunDirFlag, announceRunFolder, datasetFacts, engineFacts, openRunFolder, writeRunResult } from './run-folder.js';

interface TrainFlags extends CommonEnvFlags, SchedulerFlags, ThreadsFlags {
  env?: string;
  demos?: string;
  run?: string;
  runDir?: string;
  checkpoints: string;
  resume?: boolean;
  seed: string;
  heldOut: string;
  turnLimit: string;
  bcEpochs: string;
  bcBatch: string;
  bcSampling: string;
  bcLr: string;
  pgIterations: string;
  pgEpisodes: string;
  pgLr: string;
  entropy: string;
  evalEvery: string;
  corpus?: string;
  corpusEpochs: string;
  corpusPairs: string;
  retrieved?: string;
  json?: boolean;
}

function fraction(flag: string, value: string, { max }: { max: number }): number {
  const n = Number(value);
  if (!(n >= 0 && n <= max)) throw new ConfigError(flag, `must be a number from 0 to ${max}, got "${value}"`);
  return n;
}

function positiveNumber(flag: string, value: string): number {
  const n = Number(value);
  if (!(n > 0)) throw new ConfigError(flag, `must be a positive number, got "${value}"`);
  return n;
}

function nonNegativeInteger(flag: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new ConfigError(flag, `must be a non-negative integer, got "${value}"`);
  return n;
}

function sampling(value: string): 'uniform' | 'prioritized' {
  if (value !== 'uniform' && value !== 'prioritized') throw new ConfigError('--bc-sampling', `must be uniform or prioritized, got "${value}"`);
  return value;
}

function corpusName(value: string): 'nl2bash' | 'none' {
  if (value !== 'nl2bash' && value !== 'none') throw new ConfigError('--corpus', `must be nl2bash or none, got "${value}"`);
  return value;
}

/**
 * `intercode train`: random-policy baseline, retrieval without learning, corpus imitation, behaviour cloning on demonstrations, then
 * REINFORCE on the env's reward, checkpointing every iteration to checkpoints/<run>.
 */
export function registerTrainCommand(program: Command): void {
  const command = program
    .command('train')
    .description('train a neural policy: behaviour cloning on demonstrations, then policy gradient on the env reward; checkpoints and metrics in the run folder (checkpoints/<run> with --run)')
    .option('--env <name>', `environment: ${ENV_PLUGINS.map((c) => c.name).join(', ')} (with --resume: the run's)`)
    .option('--demos <path>', 'demonstrations: a JSONL file or a replay-buffer folder from `intercode collect` (not needed with --resume)')
    .option('--run <name>', 'the run\'s name: its folder is <checkpoints>/<name> (default: a new runs/train-<UTC time>/, or --run-dir)')
    .option('--checkpoints <dir>', 'where run folders live', 'checkpoints')
    .option('--resume', 'continue the run from its last checkpoint (its own settings apply); name it with --run or --run-dir')
    .option('--seed <n>', 'seed for the task split, initial weights, minibatches and sampled actions', '1')
    .option('--held-out <fraction>', 'share of tasks kept out of training', '0.2')
    .option('--turn-limit <n>', 'actions per episode before a submit is forced', '3')
    .option('--bc-epochs <n>', 'behaviour-cloning epochs', '40')
    .option('--bc-batch <n>', 'behaviour-cloning minibatch size', '32')
    .option('--bc-sampling <how>', 'uniform or prioritized (by each example\'s loss) minibatches from the replay buffer', 'uniform')
    .option('--bc-lr <rate>', 'behaviour-cloning Adam learning rate', '0.01')
    .option('--pg-iterations <n>', 'policy-gradient iterations', '6')
    .option('--pg-episodes <n>', 'episodes per policy-gradient iteration', '24')
    .option('--pg-lr <rate>', 'policy-gradient Adam learning rate', '0.003')
    .option('--entropy <coef>', 'entropy bonus coefficient', '0.01')
    .option('--corpus <name>', 'nl2bash (the shipped NL2Bash corpus, near-duplicates of held-out tasks removed) or none: imitated first and searched for candidates (default: nl2bash for bash, the env default; else none)')
    .option('--corpus-epochs <n>', 'corpus-imitation epochs', '3')
    .option('--corpus-pairs <n>', 'corpus pairs drawn per corpus-imitation epoch', '2048')
    .option('--retrieved <n>', 'candidates retrieved per state: the commands of the n nearest descriptions, adapted to the query (default: 8 for bash, the env default; else 0)')
    .option('--eval-every <n>', 'greedy evaluation after every n policy-gradient iterations (and after the last)', '3')
    .option('--json', 'print one JSON object: the run summary (see README: train --json)');
  addThreadsFlag(command);
  addRunDirFlag(command, 'config, demonstrations, metrics, checkpoints');
  addSchedulerFlags(addEnvFlags(command, ENV_PLUGINS)).action(async (flags: TrainFlags, self: Command) => {
    const startedAt = new Date();
    if (flags.run !== undefined && flags.runDir !== undefined) throw new ConfigError('--run-dir', 'names the run folder, as --run does (<checkpoints>/<name>): give one of them');
    if (flags.resume && flags.run === undefined && flags.runDir === undefined) throw new ConfigError('--resume', 'needs the run to continue: --run NAME or --run-dir DIR');
    const log = (line: string) => process.stderr.write(`${line}\n`);
    const { createRun, train } = await import('../../training/loops/trainer.js');
    const { VecEpisodeRunner } = await import('../../training/loops/episode-runner.js');
    const { selectBackend } = await import('../../training/scorer/backend.js');
    const { DEFAULT_SHAPE } = await import('../../training/scorer/network.js');
    const { loadDemos } = await import('../../training/demos/demo-episode.js');
    const { describeMeanReward } = await import('../../training/loops/outcome.js');
    const { readRunConfig, runPaths } = await import('../../training/run/run-files.js');
    const dir = flags.run !== undefined ? join(flags.checkpoints, flags.run) : flags.resume ? flags.runDir! : openRunFolder('train', flags.runDir);
    const paths = runPaths(dir);
    const engineSettings = { ...schedulerFlags(flags), threads: threadCount(flags) };
    let envName: string;
    if (flags.resume) {
      if (!existsSync(paths.config)) throw new ConfigError('--resume', `found no run at ${dir}`);
      envName = readRunConfig<{ settings: { env: string } }>(paths.config, '--run').settings.env;
      if (flags.env && flags.env !== envName) throw new ConfigError('--env', `is ${flags.env}, but run ${dir} trains on ${envName}`);
    } else {
      if (!flags.env) throw new ConfigError('--env', 'is required for a new run');
      if (!flags.demos) throw new ConfigError('--demos', 'is required for a new run');
      envName = flags.env;
    }
    const plugin = selectEnvPlugin(ENV_PLUGINS, '--env', envName, self);
    await selectBackend(log);
    const settings = flags.resume
      ? undefined
      : {
          env: envName,
          seed: Number(flags.seed),
          heldOutFraction: fraction('--held-out', flags.heldOut, { max: 0.9 }),
          turnLimit: positiveInteger('--turn-limit', flags.turnLimit),
          bcEpochs: positiveInteger('--bc-epochs', flags.bcEpochs),
          bcBatchSize: positiveInteger('--bc-batch', flags.bcBatch),
          bcSampling: sampling(flags.bcSampling),
          bcLearningRate: positiveNumber('--bc-lr', flags.bcLr),
          pgIterations: nonNegativeInteger('--pg-iterations', flags.pgIterations),
          pgEpisodes: positiveInteger('--pg-episodes', flags.pgEpisodes),
          pgLearningRate: positiveNumber('--pg-lr', flags.pgLr),
          valueCoef: 0.5,
          entropyCoef: fraction('--entropy', flags.entropy, { max: 1 }),
          evalEvery: positiveInteger('--eval-every', flags.evalEvery),
          shape: DEFAULT_SHAPE,
          removeNearDuplicates: true,
          corpus: corpusName(flags.corpus ?? plugin.training.corpus?.name ?? 'none'),
          corpusEpochs: nonNegativeInteger('--corpus-epochs', flags.corpusEpochs),
          corpusPairsPerEpoch: positiveInteger('--corpus-pairs', flags.corpusPairs),
          retrieved: nonNegativeInteger('--retrieved', flags.retrieved ?? String(plugin.training.corpus?.retrievedPerState ?? 0)),
        };
    if (settings && !Number.isInteger(settings.seed)) throw new ConfigError('--seed', `must be an integer, got "${flags.seed}"`);
    const demos = settings ? loadDemos(flags.demos!) : [];
    const { scheduler, releaseEngines } = await openCommandScheduler(plugin, flags as TrainFlags & Record<string, unknown>, engineSettings, 'eval', log);
    const runner = new VecEpisodeRunner(plugin.name, scheduler.vec, log);
    let progress: Progress | undefined;
    try {
      if (settings) createRun(dir, settings, runner.tasks, demos);
      const summary = await train(dir, {
        runner,
        exploration: plugin.training.exploration,
        resume: flags.resume ?? false,
        log,
        onIteration: (record, total) => {
          progress ??= new Progress('iterations', total);
          const figures = [record.phase, record.loss !== undefined ? `loss ${record.loss.toFixed(3)}` : '', record.successRate !== undefined ? `success ${(record.successRate * 100).toFixed(0)} %` : ''];
          progress.update(record.iteration + 1, figures.filter(Boolean).join(' '));
        },
      });
      progress?.stop();
      writeRunResult(dir, { command: 'train', startedAt, figures: summary, dataset: datasetFacts(flags.data, runner.tasks), engine: engineFacts(flags), files: { metrics: 'metrics.jsonl', checkpoint: 'checkpoint.msgpack' } });
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(summary)}\n`);
        announceRunFolder(dir, true);
        return;
      }
      const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
      console.log(`run ${dir}: ${summary.trainTasks} training tasks, ${summary.heldOutTasks} held out, ${summary.candidates} candidate actions`);
      console.log(`  near-duplicates of held-out tasks removed: ${summary.nearDuplicates.trainTasks} training tasks, ${summary.nearDuplicates.corpusRemoved} corpus pairs (${summary.nearDuplicates.corpusKept} kept)`);
      console.log(`  random policy   train ${pct(summary.baseline.train)}  held-out ${pct(summary.baseline.heldOut)}  ${describeMeanReward(summary.baseline)}`);
      if (summary.retrieval) console.log(`  retrieval       train ${pct(summary.retrieval.train)}  held-out ${pct(summary.retrieval.heldOut)}  ${describeMeanReward(summary.retrieval)}`);
      console.log(`  after cloning   train ${pct(summary.afterBc.train)}  held-out ${pct(summary.afterBc.heldOut)}  ${describeMeanReward(summary.afterBc)}`);
      console.log(`  final           train ${pct(summary.final.train)}  held-out ${pct(summary.final.heldOut)}  ${describeMeanReward(summary.final)}`);
      console.log(`  env steps/s during policy gradient ${summary.envStepsPerSec.toFixed(2)}; ${summary.iterations} iterations in ${summary.elapsedSec.toFixed(1)} s`);
      console.log(`  curves: intercode plot ${dir}`);
      announceRunFolder(dir, false);
    } finally {
      progress?.stop();
      await runner.close();
      releaseEngines();
    }
  });
}
