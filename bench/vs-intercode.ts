import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { packagePath } from '../src/package-path.js';
import { cleanup } from '../src/sandbox/docker/cleanup.js';
import { connectEngine } from '../src/sandbox/docker/engine.js';
import { parseBenchArgs, positiveNumber } from './bench-args.js';
import type { Bench, BenchIO } from './types.js';

/**
 * The shared reference folder: `$INTERCODE_SHARED`, else `../shared` next to the checkout,
 * else `../../shared` (a git worktree one level further down).
 */
export function sharedDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.INTERCODE_SHARED) return env.INTERCODE_SHARED;
  const near = packagePath('..', 'shared');
  const far = packagePath('..', '..', 'shared');
  return existsSync(near) || !existsSync(far) ? near : far;
}

const INTERCODE_ATTEMPTS = 5;

/** What one env's comparison needs: InterCode's task file, bench.sh's env, our run's own flags. */
interface VsEnv {
  /** InterCode's task file, under ../shared/intercode-data. */
  data: readonly string[];
  /** Other files the comparison needs (the testbed, the dump), under ../shared/intercode-data. */
  inputs: readonly (readonly string[])[];
  defaultTasks: number;
  /** Our `run`'s env flags, given the resolved `inputs`. */
  ourFlags(inputs: readonly string[], exec: string): string[];
  /** Whether `run` keeps verified golds on disk (`--gold-cache-dir`): the first run gets an empty folder. */
  goldCacheDir: boolean;
  what: string;
}

const ENVS: Record<'bash' | 'sql' | 'python', VsEnv> = {
  bash: {
    data: ['nl2bash', 'nl2bash_fs_1.json'],
    inputs: [['nl2bash', 'fs-1.tar']],
    defaultTasks: 40,
    ourFlags: ([fs1], exec) => ['--testbed', fs1!, '--exec', exec],
    goldCacheDir: true,
    what: "BashEnv on NL2Bash fs-1 (its testbed, fs-1.tar, on our side too)",
  },
  sql: {
    data: ['sql', 'spider', 'ic_spider_dev.json'],
    inputs: [['sql', 'spider', 'ic_spider_dbs.sql']],
    defaultTasks: 200,
    ourFlags: ([dump]) => ['--dump', dump!],
    goldCacheDir: true,
    what: 'SqlEnv (MariaDB) on Spider dev (ic_spider_dbs.sql loaded on our side too)',
  },
  python: {
    data: ['python', 'mbpp', 'ic_mbpp.json'],
    inputs: [],
    defaultTasks: 100,
    ourFlags: () => [],
    goldCacheDir: false,
    what: 'PythonEnv (rpyc) on MBPP',
  },
};

const USAGE = `Usage: npm run bench -- vs-intercode [options]

The original InterCode (Python, ../shared/baselines/intercode-py/bench.sh: its own env
playing each gold, then submit) against \`intercode run <env>\` on the same tasks, for one env:
  bash (default)  ${ENVS.bash.what}, tasks 0-39
  sql             ${ENVS.sql.what}, tasks 0-199
  python          ${ENVS.python.what}, tasks 0-99
Ours runs with --parallel 1 and 8 (bash) or with run's default --parallel and 8 (sql,
python), each twice: a first run with an empty gold cache folder (bash, sql: every gold
verified) and no sandbox kept warm (every sandbox this bench kept warm is removed first;
our runs carry a label of their own, so nothing else on the engine is touched), and a second run that finds the golds on disk and the
first run's sandboxes kept warm (run's default --keep-warm). Then \`intercode run <env>\` on
the env's built-in tasks, twice alike, timed from process start to exit. The kept-warm
sandboxes are removed again at the end.
All in one run, one after another: ratios are only meaningful within one run on a loaded machine.
Figures are episodes per second after set-up (InterCode: its constructor's start-up not timed;
ours: --json's episodesPerSec, after setupSec). Needs ../shared/baselines/intercode-py and
../shared/intercode-data (\$INTERCODE_SHARED names another folder; exits 1 saying so when
absent) and a Docker engine.

Options:
  --env ENV      bash (default), sql or python
  --first N      first task index (default 0)
  --tasks N      tasks (default 40 for bash, 200 for sql, 100 for python)
  --passes N     InterCode passes over the tasks (default 2, as bench.sh)
  --exec MODE    bash only, passed to run bash: session (default, run's own default) or intercode
  --json         print one JSON object:
                 {"env","intercode":{"episodesPerSec","meanReward","below1"},
                  "runs":[{"parallel","run","episodesPerSec","setupSec","elapsedSec","wallSec","solved","episodes","meanReward"}],
                  "ratios":{"<parallel>":{"first","second"},...},
                  "builtin":{"firstWallSec","secondWallSec","episodes","solved"},
                  "rewardsDiffering":[{"index","intercode":[per pass],"ours":[per run]}],"loadAverage1m","tasks","exec"}
                 (runs' parallel 0 stands for run's default --parallel; "exec" is null but for bash)
  -h, --help     show this help
`;

interface RunJson {
  episodes: number;
  solved: number;
  meanReward: number;
  elapsedSec: number;
  setupSec: number;
  episodesPerSec: number;
  tasks: { index: number; reward: number }[];
}

interface IntercodeJson {
  episodes: number;
  episodesPerSec: number;
  meanReward: number;
  below1: { pass: number; index: number; reward: number }[];
}

export interface VsIntercodeResult {
  env: 'bash' | 'sql' | 'python';
  intercode: { episodesPerSec: number; meanReward: number; below1: IntercodeJson['below1'] };
  runs: { parallel: number; run: 'first' | 'second'; episodesPerSec: number; setupSec: number; elapsedSec: number; wallSec: number; solved: number; episodes: number; meanReward: number }[];
  ratios: Record<string, { first: number; second: number }>;
  builtin: { firstWallSec: number; secondWallSec: number; episodes: number; solved: number };
  /** Tasks where one of our runs scored a reward InterCode gave in none of its passes (`intercode`: its reward per pass; `ours`: per run, in `runs` order). */
  rewardsDiffering: { index: number; intercode: number[]; ours: number[] }[];
  loadAverage1m: number;
  tasks: number;
  exec: string | null;
}

/**
 * The tasks where one of our rewards is none of InterCode's for that task (within 0.01).
 * InterCode's reward for a task in each pass is 1 unless its `below1` lists the task for that pass.
 * @param ours our rewards per task index, one per run.
 */
export function compareRewards(
  below1: readonly { pass: number; index: number; reward: number }[],
  passes: number,
  ours: ReadonlyMap<number, readonly number[]>,
): VsIntercodeResult['rewardsDiffering'] {
  const theirs = (index: number) => Array.from({ length: passes }, (_, pass) => below1.find((b) => b.index === index && b.pass === pass)?.reward ?? 1);
  return [...ours]
    .filter(([index, rewards]) => rewards.some((r) => !theirs(index).some((ic) => Math.abs(r - ic) <= 0.01)))
    .map(([index, rewards]) => ({ index, intercode: theirs(index), ours: [...rewards] }))
    .sort((a, b) => a.index - b.index);
}

/** Runs `command` with `args`; @returns stdout, exit code and wall seconds. Stderr lines go to `progress`. */
function runProcess(command: string, args: readonly string[], progress: (line: string) => void, env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null; stdout: string; wallSec: number; stderrTail: string }> {
  const started = performance.now();
  const child = spawn(command, args, { cwd: packagePath(), stdio: ['ignore', 'pipe', 'pipe'], env });
  let stdout = '';
  let stderrTail = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => {
    const text = chunk.toString();
    stderrTail = (stderrTail + text).slice(-2000);
    for (const line of text.split(/[\r\n]+/)) if (line.trim() && !line.startsWith('tasks:')) progress(line);
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, wallSec: (performance.now() - started) / 1000, stderrTail }));
  });
}

const lastJsonLine = (text: string): unknown => JSON.parse(text.trim().split('\n').filter((l) => l.startsWith('{')).at(-1) ?? 'null');

export const vsIntercodeBench: Bench = {
  name: 'vs-intercode',
  summary: "the original InterCode's BashEnv, SqlEnv or PythonEnv vs `intercode run bash|sql|python` (cold and warm, default and 8 envs) on NL2Bash fs-1, Spider dev or MBPP: episodes/s and ratios",
  async run(args: readonly string[], io: BenchIO): Promise<number> {
    const values = parseBenchArgs('vs-intercode', args, { env: { type: 'string' }, first: { type: 'string' }, tasks: { type: 'string' }, passes: { type: 'string' }, exec: { type: 'string' } });
    if (values === 'help') {
      io.stdout.write(USAGE);
      return 0;
    }
    const envName = typeof values.env === 'string' ? values.env : 'bash';
    if (envName !== 'bash' && envName !== 'sql' && envName !== 'python') {
      io.stderr.write(`vs-intercode: --env must be bash, sql or python, got "${envName}"\n`);
      return 2;
    }
    if (envName !== 'bash' && values.exec !== undefined) {
      io.stderr.write('vs-intercode: --exec applies to bash only\n');
      return 2;
    }
    const vs = ENVS[envName];
    const first = values.first === '0' ? 0 : positiveNumber('--first', values.first, 0, true);
    const count = positiveNumber('--tasks', values.tasks, vs.defaultTasks, true);
    const passes = positiveNumber('--passes', values.passes, 2, true);
    const exec = envName === 'bash' ? (typeof values.exec === 'string' ? values.exec : 'session') : null;
    // bash: 1 and 8 envs, as before; sql and python: run's default (what a user gets) and 8.
    const parallels = envName === 'bash' ? [1, 8] : [0, 8];
    const log = (line: string) => io.stderr.write(`[vs-intercode] ${line}\n`);
    const shared = sharedDir();
    const benchSh = join(shared, 'baselines', 'intercode-py', 'bench.sh');
    const data = join(shared, 'intercode-data', ...vs.data);
    const inputs = vs.inputs.map((parts) => join(shared, 'intercode-data', ...parts));
    const missing = [benchSh, data, ...inputs].find((path) => !existsSync(path));
    if (missing) {
      io.stderr.write(`vs-intercode: ${missing} does not exist; this bench needs baselines/intercode-py and intercode-data in ../shared next to the checkout (or $INTERCODE_SHARED)\n`);
      return 1;
    }
    const records = JSON.parse(await readFile(data, 'utf8')) as unknown[];
    if (first + count > records.length) {
      io.stderr.write(`vs-intercode: --first ${first} --tasks ${count} runs past the ${records.length} tasks of ${data}\n`);
      return 2;
    }
    const work = await mkdtemp(join(tmpdir(), 'intercode-vs-'));
    let coldStart: (() => Promise<unknown>) | undefined;
    try {
      const taskFile = join(work, 'tasks.json');
      await writeFile(taskFile, JSON.stringify(records.slice(first, first + count)));
      const loadAverage1m = loadavg()[0] ?? 0;

      log(`InterCode (Python), ${envName}: ${count} tasks from ${first}, ${passes} pass(es)`);
      const benchArgs = [benchSh, envName, String(first), String(count), String(passes)];
      // InterCode's get_container lists every container of the engine, then inspects each: one
      // removed in between (other work on a shared engine) makes it fail with a 404. Tried again.
      let ic = await runProcess('bash', benchArgs, () => undefined);
      for (let attempt = 2; ic.code !== 0 && attempt <= INTERCODE_ATTEMPTS && /No such container/.test(ic.stderrTail); attempt += 1) {
        log(`InterCode failed listing the engine's containers (one vanished meanwhile); attempt ${attempt} of ${INTERCODE_ATTEMPTS}`);
        ic = await runProcess('bash', benchArgs, () => undefined);
      }
      const intercode = lastJsonLine(ic.stdout) as IntercodeJson | null;
      if (ic.code !== 0 || !intercode) {
        io.stderr.write(`vs-intercode: InterCode's bench.sh failed (exit ${ic.code}):\n${ic.stderrTail}\n`);
        return 1;
      }
      log(`InterCode: ${intercode.episodesPerSec} episodes/s, mean reward ${intercode.meanReward}`);

      const cli = packagePath('bin', 'intercode.js');
      const ours = async (extra: readonly string[], what: string) => {
        const result = await runProcess(process.execPath, [cli, 'run', envName, ...extra, '--json'], () => undefined, ourEnv);
        const parsed = lastJsonLine(result.stdout) as RunJson | null;
        if (result.code !== 0 || !parsed) throw new Error(`intercode run ${envName} (${what}) failed (exit ${result.code}):\n${result.stderrTail}`);
        return { ...parsed, wallSec: result.wallSec };
      };
      // A first run finds nothing warm: neither golds (a new cache folder) nor sandboxes.
      const docker = await connectEngine();
      // Our runs' sandboxes carry this bench's own run label, so a cold start removes only the
      // sandboxes this bench kept warm, never those of other work on a shared engine.
      const benchRun = `vs-intercode-${randomBytes(6).toString('hex')}`;
      const ourEnv = { ...process.env, INTERCODE_TEST_RUN: benchRun };
      coldStart = () => cleanup(docker, { warmOnly: true, testRun: benchRun });
      const runs: VsIntercodeResult['runs'] = [];
      const rewards = new Map<number, number[]>();
      const parallelFlag = (parallel: number) => (parallel === 0 ? [] : ['--parallel', String(parallel)]);
      const parallelName = (parallel: number) => (parallel === 0 ? 'default --parallel' : `--parallel ${parallel}`);
      const cacheFlag = (dir: string) => (vs.goldCacheDir ? ['--gold-cache-dir', dir] : []);
      for (const parallel of parallels) {
        const cache = join(work, `golds-${parallel}`);
        for (const run of ['first', 'second'] as const) {
          if (run === 'first') await coldStart();
          const r = await ours(['--data', taskFile, ...vs.ourFlags(inputs, exec ?? ''), ...parallelFlag(parallel), ...cacheFlag(cache)], `${parallelName(parallel)}, ${run} run`);
          runs.push({ parallel, run, episodesPerSec: r.episodesPerSec, setupSec: r.setupSec, elapsedSec: r.elapsedSec, wallSec: r.wallSec, solved: r.solved, episodes: r.episodes, meanReward: r.meanReward });
          for (const t of r.tasks) rewards.set(first + t.index, [...(rewards.get(first + t.index) ?? []), t.reward]);
          log(`intercode run ${envName} ${parallelName(parallel)}, ${run} run: ${r.episodesPerSec.toFixed(2)} episodes/s after ${r.setupSec.toFixed(2)} s set-up (${(r.episodesPerSec / intercode.episodesPerSec).toFixed(1)}× InterCode), ${r.solved}/${r.episodes} scored 1`);
        }
      }
      const builtinCache = join(work, 'golds-builtin');
      await coldStart();
      const b1 = await ours(cacheFlag(builtinCache), 'built-in tasks, first run');
      const b2 = await ours(cacheFlag(builtinCache), 'built-in tasks, second run');
      log(`built-in tasks: first run ${b1.wallSec.toFixed(2)} s, second ${b2.wallSec.toFixed(2)} s wall (${b2.solved}/${b2.episodes} scored 1)`);

      const rewardsDiffering = compareRewards(intercode.below1, passes, rewards);
      const ratio = (parallel: number, run: 'first' | 'second') => runs.find((r) => r.parallel === parallel && r.run === run)!.episodesPerSec / intercode.episodesPerSec;
      const result: VsIntercodeResult = {
        env: envName,
        intercode: { episodesPerSec: intercode.episodesPerSec, meanReward: intercode.meanReward, below1: intercode.below1 },
        runs,
        ratios: Object.fromEntries(parallels.map((p) => [String(p), { first: ratio(p, 'first'), second: ratio(p, 'second') }])),
        builtin: { firstWallSec: b1.wallSec, secondWallSec: b2.wallSec, episodes: b2.episodes, solved: b2.solved },
        rewardsDiffering,
        loadAverage1m,
        tasks: count,
        exec,
      };
      if (values.json) {
        io.stdout.write(`${JSON.stringify(result)}\n`);
      } else {
        io.stdout.write(formatReport(result));
      }
      return 0;
    } catch (error) {
      io.stderr.write(`vs-intercode: ${(error as Error).message}\n`);
      return 1;
    } finally {
      await coldStart?.().catch(() => undefined);
      await rm(work, { recursive: true, force: true });
    }
  },
};

const ENV_CLASS: Record<VsIntercodeResult['env'], string> = { bash: 'BashEnv', sql: 'SqlEnv', python: 'PythonEnv' };

function formatReport(r: VsIntercodeResult): string {
  const lines = [
    `InterCode ${ENV_CLASS[r.env].padEnd(10)} (Python)      ${r.intercode.episodesPerSec.toFixed(2)} episodes/s, mean reward ${r.intercode.meanReward}`,
    ...r.runs.map(
      (run) =>
        `intercode run ${r.env} --parallel ${(run.parallel === 0 ? 'def' : String(run.parallel)).padEnd(3)} ${run.run.padEnd(6)} ${run.episodesPerSec.toFixed(2).padStart(7)} episodes/s ` +
        `(${(run.episodesPerSec / r.intercode.episodesPerSec).toFixed(1)}×), set-up ${run.setupSec.toFixed(2)} s, wall ${run.wallSec.toFixed(2)} s, ${run.solved}/${run.episodes} scored 1`,
    ),
    `built-in tasks                    first run ${r.builtin.firstWallSec.toFixed(2)} s, second run ${r.builtin.secondWallSec.toFixed(2)} s wall (${r.builtin.solved}/${r.builtin.episodes} scored 1)`,
    r.rewardsDiffering.length === 0
      ? 'every reward as InterCode\'s'
      : `rewards differing from InterCode's: ${r.rewardsDiffering.map((d) => `task ${d.index} (InterCode ${d.intercode.join('/')}, ours ${d.ours.join('/')})`).join(', ')}`,
    `tasks ${r.tasks}${r.exec === null ? '' : `, --exec ${r.exec}`}, 1-minute load at start ${r.loadAverage1m.toFixed(2)}`,
  ];
  return `${lines.join('\n')}\n`;
}
