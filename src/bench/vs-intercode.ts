import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { packagePath } from '../package-path.js';
import { cleanup } from '../sandbox/docker/cleanup.js';
import { connectEngine } from '../sandbox/docker/engine.js';
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

const PARALLEL = [1, 8] as const;
const INTERCODE_ATTEMPTS = 5;

const USAGE = `Usage: npm run bench -- vs-intercode [options]

The original InterCode (Python, ../shared/baselines/intercode-py/bench.sh: its own BashEnv
playing each gold command, then submit) on NL2Bash fs-1 tasks, then \`intercode run bash\` on
the same tasks and testbed (fs-1.tar) with --parallel 1 and 8, each twice: a first run with an
empty gold cache (every gold verified: two clean runs) and no sandbox kept warm (every
kept-warm sandbox on the engine is removed first, as \`intercode cleanup --warm\` does), and a
second run that finds the golds on disk and the first run's sandboxes kept warm (run's
default --keep-warm). Then \`intercode run bash\` on the built-in tasks, twice alike, timed
from process start to exit. The kept-warm sandboxes are removed again at the end.
All in one run, one after another: ratios are only meaningful within one run on a loaded machine.
Figures are episodes per second after set-up (InterCode: its constructor's start-up not timed;
ours: --json's episodesPerSec, after setupSec). Needs ../shared/baselines/intercode-py and
../shared/intercode-data (\$INTERCODE_SHARED names another folder; exits 1 saying so when
absent) and a Docker engine.

Options:
  --first N      first task index (default 0)
  --tasks N      tasks (default 40)
  --passes N     InterCode passes over the tasks (default 2, as bench.sh)
  --exec MODE    passed to run bash: session (default, run's own default) or intercode
  --json         print one JSON object:
                 {"intercode":{"episodesPerSec","meanReward","below1"},
                  "runs":[{"parallel","run","episodesPerSec","setupSec","elapsedSec","wallSec","solved","episodes","meanReward"}],
                  "ratios":{"1":{"first","second"},"8":{"first","second"}},
                  "builtin":{"firstWallSec","secondWallSec","episodes","solved"},
                  "rewardsDiffering":[{"index","intercode":[per pass],"ours":[per run]}],"loadAverage1m","tasks","exec"}
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
  intercode: { episodesPerSec: number; meanReward: number; below1: IntercodeJson['below1'] };
  runs: { parallel: number; run: 'first' | 'second'; episodesPerSec: number; setupSec: number; elapsedSec: number; wallSec: number; solved: number; episodes: number; meanReward: number }[];
  ratios: Record<string, { first: number; second: number }>;
  builtin: { firstWallSec: number; secondWallSec: number; episodes: number; solved: number };
  /** Tasks where one of our runs scored a reward InterCode gave in none of its passes (`intercode`: its reward per pass; `ours`: per run, in `runs` order). */
  rewardsDiffering: { index: number; intercode: number[]; ours: number[] }[];
  loadAverage1m: number;
  tasks: number;
  exec: string;
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
function runProcess(command: string, args: readonly string[], progress: (line: string) => void): Promise<{ code: number | null; stdout: string; wallSec: number; stderrTail: string }> {
  const started = performance.now();
  const child = spawn(command, args, { cwd: packagePath(), stdio: ['ignore', 'pipe', 'pipe'] });
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
  summary: "the original InterCode's BashEnv vs `intercode run bash` (1 and 8 envs, cold and warm gold cache) on NL2Bash fs-1: episodes/s and ratios",
  async run(args: readonly string[], io: BenchIO): Promise<number> {
    const values = parseBenchArgs('vs-intercode', args, { first: { type: 'string' }, tasks: { type: 'string' }, passes: { type: 'string' }, exec: { type: 'string' } });
    if (values === 'help') {
      io.stdout.write(USAGE);
      return 0;
    }
    const first = values.first === '0' ? 0 : positiveNumber('--first', values.first, 0, true);
    const count = positiveNumber('--tasks', values.tasks, 40, true);
    const passes = positiveNumber('--passes', values.passes, 2, true);
    const exec = typeof values.exec === 'string' ? values.exec : 'session';
    const log = (line: string) => io.stderr.write(`[vs-intercode] ${line}\n`);
    const shared = sharedDir();
    const benchSh = join(shared, 'baselines', 'intercode-py', 'bench.sh');
    const fs1 = join(shared, 'intercode-data', 'nl2bash', 'fs-1.tar');
    const data = join(shared, 'intercode-data', 'nl2bash', 'nl2bash_fs_1.json');
    const missing = [benchSh, fs1, data].find((path) => !existsSync(path));
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

      log(`InterCode (Python): ${count} tasks from ${first}, ${passes} pass(es)`);
      // InterCode's get_container lists every container of the engine, then inspects each: one
      // removed in between (other work on a shared engine) makes it fail with a 404. Tried again.
      let ic = await runProcess('bash', [benchSh, String(first), String(count), String(passes)], () => undefined);
      for (let attempt = 2; ic.code !== 0 && attempt <= INTERCODE_ATTEMPTS && /No such container/.test(ic.stderrTail); attempt += 1) {
        log(`InterCode failed listing the engine's containers (one vanished meanwhile); attempt ${attempt} of ${INTERCODE_ATTEMPTS}`);
        ic = await runProcess('bash', [benchSh, String(first), String(count), String(passes)], () => undefined);
      }
      const intercode = lastJsonLine(ic.stdout) as IntercodeJson | null;
      if (ic.code !== 0 || !intercode) {
        io.stderr.write(`vs-intercode: InterCode's bench.sh failed (exit ${ic.code}):\n${ic.stderrTail}\n`);
        return 1;
      }
      log(`InterCode: ${intercode.episodesPerSec} episodes/s, mean reward ${intercode.meanReward}`);

      const cli = packagePath('bin', 'intercode.js');
      const ours = async (extra: readonly string[], what: string) => {
        const result = await runProcess(process.execPath, [cli, 'run', 'bash', ...extra, '--json'], () => undefined);
        const parsed = lastJsonLine(result.stdout) as RunJson | null;
        if (result.code !== 0 || !parsed) throw new Error(`intercode run bash (${what}) failed (exit ${result.code}):\n${result.stderrTail}`);
        return { ...parsed, wallSec: result.wallSec };
      };
      // A first run finds nothing warm: neither golds (a new cache folder) nor sandboxes.
      const docker = await connectEngine();
      coldStart = () => cleanup(docker, { warmOnly: true });
      const runs: VsIntercodeResult['runs'] = [];
      const rewards = new Map<number, number[]>();
      for (const parallel of PARALLEL) {
        const cache = join(work, `golds-${parallel}`);
        for (const run of ['first', 'second'] as const) {
          if (run === 'first') await coldStart();
          const r = await ours(['--data', taskFile, '--testbed', fs1, '--exec', exec, '--parallel', String(parallel), '--gold-cache-dir', cache], `--parallel ${parallel}, ${run} run`);
          runs.push({ parallel, run, episodesPerSec: r.episodesPerSec, setupSec: r.setupSec, elapsedSec: r.elapsedSec, wallSec: r.wallSec, solved: r.solved, episodes: r.episodes, meanReward: r.meanReward });
          for (const t of r.tasks) rewards.set(first + t.index, [...(rewards.get(first + t.index) ?? []), t.reward]);
          log(`intercode run bash --parallel ${parallel}, ${run} run: ${r.episodesPerSec.toFixed(2)} episodes/s after ${r.setupSec.toFixed(2)} s set-up (${(r.episodesPerSec / intercode.episodesPerSec).toFixed(1)}× InterCode), ${r.solved}/${r.episodes} scored 1`);
        }
      }
      const builtinCache = join(work, 'golds-builtin');
      await coldStart();
      const b1 = await ours(['--gold-cache-dir', builtinCache], 'built-in tasks, first run');
      const b2 = await ours(['--gold-cache-dir', builtinCache], 'built-in tasks, second run');
      log(`built-in tasks: first run ${b1.wallSec.toFixed(2)} s, second ${b2.wallSec.toFixed(2)} s wall (${b2.solved}/${b2.episodes} scored 1)`);

      const rewardsDiffering = compareRewards(intercode.below1, passes, rewards);
      const ratio = (parallel: number, run: 'first' | 'second') => runs.find((r) => r.parallel === parallel && r.run === run)!.episodesPerSec / intercode.episodesPerSec;
      const result: VsIntercodeResult = {
        intercode: { episodesPerSec: intercode.episodesPerSec, meanReward: intercode.meanReward, below1: intercode.below1 },
        runs,
        ratios: Object.fromEntries(PARALLEL.map((p) => [String(p), { first: ratio(p, 'first'), second: ratio(p, 'second') }])),
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

function formatReport(r: VsIntercodeResult): string {
  const lines = [
    `InterCode BashEnv (Python)        ${r.intercode.episodesPerSec.toFixed(2)} episodes/s, mean reward ${r.intercode.meanReward}`,
    ...r.runs.map(
      (run) =>
        `intercode run bash --parallel ${String(run.parallel).padEnd(2)} ${run.run.padEnd(6)} ${run.episodesPerSec.toFixed(2).padStart(7)} episodes/s ` +
        `(${(run.episodesPerSec / r.intercode.episodesPerSec).toFixed(1)}×), set-up ${run.setupSec.toFixed(2)} s, wall ${run.wallSec.toFixed(2)} s, ${run.solved}/${run.episodes} scored 1`,
    ),
    `built-in tasks                    first run ${r.builtin.firstWallSec.toFixed(2)} s, second run ${r.builtin.secondWallSec.toFixed(2)} s wall (${r.builtin.solved}/${r.builtin.episodes} scored 1)`,
    r.rewardsDiffering.length === 0
      ? 'every reward as InterCode\'s'
      : `rewards differing from InterCode's: ${r.rewardsDiffering.map((d) => `task ${d.index} (InterCode ${d.intercode.join('/')}, ours ${d.ours.join('/')})`).join(', ')}`,
    `tasks ${r.tasks}, --exec ${r.exec}, 1-minute load at start ${r.loadAverage1m.toFixed(2)}`,
  ];
  return `${lines.join('\n')}\n`;
}
