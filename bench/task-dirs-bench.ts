import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { packagePath } from '../src/package-path.js';
import { parseBenchArgs, positiveNumber } from './bench-args.js';
import type { Bench, BenchIO } from './types.js';

const run = promisify(execFile);

const USAGE = `Usage: npm run bench -- task-dirs [--tasks N] [--images K] [--rounds R] [--json]

\`intercode run task\` over N generated Harbor task directories on K images (default 20 on 5),
the oracle as the agent, images built before the first timed run. Runs, in this order:
pooled (the first; its sandboxes parked for the next), then R times: fresh (one new sandbox
per episode, as Harbor's compose project per trial), pooled (adopting the last one's parked
sandboxes; the last of them parks none). Reports episodes/s of each run and the ratio of the
pooled runs after the first to the fresh runs (means), every episode's reward checked at 1.
`;

interface RunSummary {
  mode: 'pooled' | 'fresh';
  /** Whether this pooled run found the sandboxes an earlier one parked. */
  second: boolean;
  episodes: number;
  solved: number;
  episodesPerSec: number;
  elapsedSec: number;
}

export interface TaskDirsBenchResult {
  tasks: number;
  images: number;
  runs: RunSummary[];
  /** Mean episodes/s of the pooled runs after the first over that of the fresh runs. */
  pooledOverFresh: number;
  allSolved: boolean;
}

/** N task directories on K images: each image a Dockerfile of its own, each task a line the verifier checks. */
export async function writeBenchTasks(dir: string, tasks: number, images: number): Promise<void> {
  for (let i = 0; i < tasks; i++) {
    const root = join(dir, `task-${String(i).padStart(3, '0')}`);
    const v = i % images;
    for (const sub of ['environment', 'tests', 'solution']) await mkdir(join(root, sub), { recursive: true });
    await writeFile(join(root, 'environment', 'Dockerfile'), `FROM debian:bookworm-slim\nENV VARIANT=${v}\nWORKDIR /app\nRUN echo variant-${v} > /etc/variant\n`);
    await writeFile(join(root, 'task.toml'), 'version = "1.0"\n[verifier]\ntimeout_sec = 30\n');
    await writeFile(join(root, 'instruction.md'), `Write ${i} and the content of /etc/variant, separated by a space, to /app/out.txt.\n`);
    await writeFile(
      join(root, 'tests', 'test.sh'),
      `#!/bin/bash\nif [ "$(cat /app/out.txt 2>/dev/null)" = "${i} $(cat /etc/variant)" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n`,
    );
    await writeFile(join(root, 'solution', 'solve.sh'), `#!/bin/bash\necho "${i} $(cat /etc/variant)" > /app/out.txt\n`);
  }
}

async function runTasks(data: string, flags: readonly string[]): Promise<{ episodes: number; solved: number; episodesPerSec: number; elapsedSec: number }> {
  const { stdout } = await run(process.execPath, [packagePath('bin', 'intercode.js'), 'run', 'task', '--data', data, '--json', ...flags], { maxBuffer: 64 * 1024 * 1024 });
  return JSON.parse(stdout) as { episodes: number; solved: number; episodesPerSec: number; elapsedSec: number };
}

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

export const taskDirsBench: Bench = {
  name: 'task-dirs',
  summary: '`intercode run task` over generated Harbor task directories: pooled (second run) against one fresh sandbox per episode, episodes/s and ratio',
  async run(args: readonly string[], io: BenchIO): Promise<number> {
    let values;
    try {
      values = parseBenchArgs('task-dirs', args, { tasks: { type: 'string' }, images: { type: 'string' }, rounds: { type: 'string' } });
    } catch (error) {
      io.stderr.write(`bench task-dirs: ${(error as Error).message}\n`);
      return 2;
    }
    if (values === 'help') {
      io.stdout.write(USAGE);
      return 0;
    }
    const tasks = positiveNumber('--tasks', values.tasks, 20, true);
    const images = positiveNumber('--images', values.images, 5, true);
    const rounds = positiveNumber('--rounds', values.rounds, 2, true);
    const dir = await mkdtemp(join(tmpdir(), 'intercode-task-dirs-bench-'));
    try {
      await writeBenchTasks(dir, tasks, images);
      io.stderr.write('task-dirs: building the images (an untimed run)\n');
      await runTasks(dir, ['--keep-warm', '0']);
      const runs: RunSummary[] = [];
      const timed = async (mode: 'pooled' | 'fresh', second: boolean, flags: string[]) => {
        const summary = await runTasks(dir, flags);
        runs.push({ mode, second, ...summary });
        io.stderr.write(`task-dirs: ${mode}${second ? ' (second)' : ''}: ${summary.episodesPerSec.toFixed(3)} episodes/s\n`);
      };
      await timed('pooled', false, ['--keep-warm', '120']);
      for (let r = 0; r < rounds; r++) {
        await timed('fresh', false, ['--sandboxes', 'fresh']);
        await timed('pooled', true, ['--keep-warm', r === rounds - 1 ? '0' : '120']);
      }
      const pooled = runs.filter((r) => r.mode === 'pooled' && r.second).map((r) => r.episodesPerSec);
      const fresh = runs.filter((r) => r.mode === 'fresh').map((r) => r.episodesPerSec);
      const result: TaskDirsBenchResult = { tasks, images, runs, pooledOverFresh: mean(pooled) / mean(fresh), allSolved: runs.every((r) => r.solved === r.episodes) };
      if (values.json) io.stdout.write(`${JSON.stringify(result)}\n`);
      else {
        const lines = runs.map((r) => `${(r.mode + (r.second ? ' (second)' : ' (first)')).padEnd(18)} ${r.episodesPerSec.toFixed(3)} episodes/s  ${r.elapsedSec.toFixed(1)} s  ${r.solved}/${r.episodes} solved`);
        io.stdout.write(`${tasks} task directories on ${images} images\n${lines.join('\n')}\npooled (second runs) / fresh: ${result.pooledOverFresh.toFixed(2)}x\n`);
      }
      return result.allSolved ? 0 : 1;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
};
