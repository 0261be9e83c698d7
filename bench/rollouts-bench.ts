/**
 * The rollouts bench: episodes/s through `serve`'s POST /rollouts against `collect`'s
 * in-process sampling (sampleGroups on an EpisodeScheduler), the same tasks, K, parallelism and
 * recorded model. Options and method: {@link ROLLOUTS_USAGE}.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createBashEnvs, GoldCache } from '../envs/bash/index.js';
import { bashPlugin } from '../envs/bash/plugin.js';
import { createStrategy, OpenAiChatClient } from '../src/agents/index.js';
import { goldText, type Task } from '../src/datasets/index.js';
import { EpisodeScheduler } from '../src/scheduler/index.js';
import { ConfigError } from '../src/errors.js';
import { RecordedModel, startMockServer, type MockServer } from '../src/mock-llm/index.js';
import { sampleGroups } from '../src/rollouts/index.js';
import { EnvServer, SERVER_DEFAULTS } from '../src/server/env-server.js';
import { pooledEnvSlots } from '../src/server/pooled-env-slots.js';
import { parseBenchArgs, positiveNumber } from './bench-args.js';
import { engineBench } from './engine-bench.js';
import { formatTable } from './table.js';
import { recordedEnvFence } from '../envs/index.js';

export interface RolloutsBenchOptions {
  parallel: number;
  samplesPerTask: number;
  /** The first n built-in bash tasks (default: all). */
  tasks: number | undefined;
  rounds: number;
  json: boolean;
}

export interface RolloutsRound {
  inProcessEpisodesPerSec: number;
  endpointEpisodesPerSec: number;
}

export interface RolloutsBenchResult {
  parallel: number;
  samplesPerTask: number;
  tasks: number;
  episodesPerRound: number;
  rounds: RolloutsRound[];
  /** Over all rounds: episodes / seconds. */
  inProcessEpisodesPerSec: number;
  endpointEpisodesPerSec: number;
  /** endpoint / in-process. */
  ratio: number;
  /** Episodes whose reward was below 1 (every recorded reply is the task's gold: should be 0). */
  belowOne: number;
}

export const ROLLOUTS_USAGE = `Usage: npm run bench -- rollouts [options]

Rollouts as a service against collect in-process, in one run: bash envs on a warm pool,
the recorded model (every built-in task answered with its gold as an execute call, tools
strategy, token ids asked for) served on 127.0.0.1 in this process.
  - in-process: sampleGroups on an EpisodeScheduler, what \`collect --policy llm:…\` runs;
  - endpoint: \`serve\`'s server (in this process) and one POST /rollouts with the same
    tasks, samples per task and parallelism, the NDJSON stream read to its end line.
Both pools are warm before the clock starts; one uncounted round of one sample per task
warms both. Each counted round runs in-process then endpoint (alternating which goes
first); the figures are episodes / wall seconds over all rounds, ratio = endpoint / in-process.

Options:
  --parallel N     episodes at once in both modes (default 4)
  --samples K      samples per task (default 2)
  --tasks N        the first N built-in tasks (default: all)
  --rounds R       counted rounds (default 2)
  --json           print only one JSON object on stdout: {"parallel","samplesPerTask","tasks",
                   "episodesPerRound","rounds":[{"inProcessEpisodesPerSec","endpointEpisodesPerSec"}],
                   "inProcessEpisodesPerSec","endpointEpisodesPerSec","ratio","belowOne"}
  -h, --help       show this help
`;

/** @throws ConfigError naming the bad option. */
export function parseRolloutsOptions(args: readonly string[]): RolloutsBenchOptions | 'help' {
  const values = parseBenchArgs('rollouts', args, { parallel: { type: 'string' }, samples: { type: 'string' }, tasks: { type: 'string' }, rounds: { type: 'string' } });
  if (values === 'help') return 'help';
  return {
    parallel: positiveNumber('--parallel', values.parallel, 4, true),
    samplesPerTask: positiveNumber('--samples', values.samples, 2, true),
    tasks: values.tasks === undefined ? undefined : positiveNumber('--tasks', values.tasks, 1, true),
    rounds: positiveNumber('--rounds', values.rounds, 2, true),
    json: values.json === true,
  };
}

/** A recording in which every task's episode is its gold, once. */
async function goldRecording(dir: string, tasks: readonly Task[]): Promise<MockServer> {
  const file = join(dir, 'golds.json');
  const episodes = Object.fromEntries(
    tasks.map((t, i) => [i, { environment: 'ic_bash', query: t.query, turn_history: { actions: [goldText(t)], observations: [''], rewards: [1], valid_action: [true] }, summary: { max_reward: 1 } }]),
  );
  await writeFile(file, JSON.stringify(episodes));
  return startMockServer(await RecordedModel.load(file, recordedEnvFence), 0);
}

async function measure(options: RolloutsBenchOptions, log: (line: string) => void): Promise<RolloutsBenchResult> {
  const goldCache = new GoldCache();
  const P = options.parallel;
  const dir = await mkdtemp(join(tmpdir(), 'intercode-rollouts-bench-'));
  const inProcessEnvs = await createBashEnvs({ goldCache }, P);
  const all = inProcessEnvs[0]!.tasks;
  if (options.tasks !== undefined && options.tasks > all.length) throw new ConfigError('--tasks', `must be at most ${all.length} (the built-in bash tasks)`);
  const tasks = all.slice(0, options.tasks ?? all.length);
  const model = await goldRecording(dir, tasks);
  const scheduler = new EpisodeScheduler(inProcessEnvs);
  const slots = pooledEnvSlots('bash', await createBashEnvs({ goldCache }, P), { spares: 2 });
  let server: EnvServer | undefined;
  let belowOne = 0;
  try {
    await Promise.all([scheduler.pool?.ready(), slots.ready()]);
    server = await EnvServer.start({ ...SERVER_DEFAULTS, slots, agentFacts: bashPlugin.agent, port: 0, metadata: { name: 'intercode-bash', description: 'rollouts bench', version: '0' }, log: () => undefined });
    const client = new OpenAiChatClient({ baseUrl: model.baseUrl, model: 'recorded', tokens: 'ids', temperature: 1 });
    const strategy = createStrategy('tools', { model: client, prompt: bashPlugin.agent.prompt });
    const inProcess = async (K: number): Promise<number> => {
      let n = 0;
      await sampleGroups({
        envName: 'bash', stepScoring: bashPlugin.agent.stepScoring, dataset: 'bench', strategy, model: 'recorded', tasks, executor: scheduler, turns: 10, samplesPerTask: K, seed: 0, temperature: 1,
        scaleAdvantages: false, stamp: 'bench',
        onGroup: (records) => {
          n += records.length;
          belowOne += records.filter((r) => r.reward < 1).length;
        },
      });
      return n;
    };
    const endpoint = async (K: number): Promise<number> => {
      const body = { tasks: tasks.map((t) => all.indexOf(t)), samples_per_task: K, base_url: model.baseUrl, model: 'recorded', tokens: 'ids', temperature: 1, turn_limit: 10, parallel: P };
      const response = await fetch(`${server!.url}/rollouts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (response.status !== 200) throw new Error(`POST /rollouts answered ${response.status}: ${await response.text()}`);
      let n = 0;
      for (const text of (await response.text()).split('\n').filter((l) => l !== '')) {
        const line = JSON.parse(text) as { type: string; records?: { reward: number }[]; message?: string };
        if (line.type === 'error') throw new Error(`POST /rollouts: ${line.message}`);
        for (const r of line.records ?? []) {
          n += 1;
          if (r.reward < 1) belowOne += 1;
        }
      }
      return n;
    };
    const timed = async (run: () => Promise<number>) => {
      const start = performance.now();
      const n = await run();
      return { n, sec: (performance.now() - start) / 1000 };
    };
    log(`warm-up: one sample of each of ${tasks.length} tasks, both modes`);
    await inProcess(1);
    await endpoint(1);
    belowOne = 0;
    const rounds: RolloutsRound[] = [];
    const totals = { inProcess: { n: 0, sec: 0 }, endpoint: { n: 0, sec: 0 } };
    for (let r = 0; r < options.rounds; r++) {
      const order = r % 2 === 0 ? (['inProcess', 'endpoint'] as const) : (['endpoint', 'inProcess'] as const);
      const got: Record<string, { n: number; sec: number }> = {};
      for (const mode of order) {
        got[mode] = await timed(() => (mode === 'inProcess' ? inProcess(options.samplesPerTask) : endpoint(options.samplesPerTask)));
        totals[mode].n += got[mode].n;
        totals[mode].sec += got[mode].sec;
      }
      const round = { inProcessEpisodesPerSec: got.inProcess!.n / got.inProcess!.sec, endpointEpisodesPerSec: got.endpoint!.n / got.endpoint!.sec };
      log(`round ${r + 1}: in-process ${round.inProcessEpisodesPerSec.toFixed(2)} episodes/s, endpoint ${round.endpointEpisodesPerSec.toFixed(2)} episodes/s`);
      rounds.push(round);
    }
    const inProcessEpisodesPerSec = totals.inProcess.n / totals.inProcess.sec;
    const endpointEpisodesPerSec = totals.endpoint.n / totals.endpoint.sec;
    return {
      parallel: P,
      samplesPerTask: options.samplesPerTask,
      tasks: tasks.length,
      episodesPerRound: tasks.length * options.samplesPerTask,
      rounds,
      inProcessEpisodesPerSec,
      endpointEpisodesPerSec,
      ratio: endpointEpisodesPerSec / inProcessEpisodesPerSec,
      belowOne,
    };
  } finally {
    await server?.close();
    if (!server) await slots.close();
    await scheduler.close();
    await model.close();
    await rm(dir, { recursive: true, force: true });
  }
}

export function formatRolloutsReport(result: RolloutsBenchResult): string {
  const rows = result.rounds.map((r, i) => [String(i + 1), r.inProcessEpisodesPerSec.toFixed(2), r.endpointEpisodesPerSec.toFixed(2), (r.endpointEpisodesPerSec / r.inProcessEpisodesPerSec).toFixed(3)]);
  return [
    `rollouts bench: ${result.tasks} tasks x ${result.samplesPerTask} samples, ${result.parallel} at once, recorded model, bash on a warm pool`,
    '',
    ...formatTable(['round', 'in-process eps/s', 'endpoint eps/s', 'ratio'], rows),
    '',
    `all rounds: in-process ${result.inProcessEpisodesPerSec.toFixed(2)} episodes/s, endpoint ${result.endpointEpisodesPerSec.toFixed(2)} episodes/s, ratio ${result.ratio.toFixed(3)}; episodes below reward 1: ${result.belowOne}`,
    '',
  ].join('\n');
}

export const rolloutsBench = engineBench({
  name: 'rollouts',
  summary: 'POST /rollouts against collect in-process: episodes/s with the recorded model, same tasks and parallelism, ratio',
  usage: ROLLOUTS_USAGE,
  parse: parseRolloutsOptions,
  measure: (_docker, options, log) => measure(options, log),
  format: formatRolloutsReport,
  failed: (result) => result.belowOne > 0,
});
