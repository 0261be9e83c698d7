/**
 * Benchmarks, by name. `bin/bench.js` looks the first command-line argument up here, so a
 * new bench (`sql`, `vec`, …) plugs in by adding one entry to {@link BENCHES}.
 *
 * How they are launched: `npm run bench -- <name> [options]` runs `node bin/bench.js`,
 * which imports the compiled `dist/bench/index.js` — plain Node, no TypeScript loader
 * in the measured process, the same code the `intercode` CLI runs. `npm ci` compiles it
 * (the "prepare" script); after editing sources run `npm run build` (the launcher warns
 * when a source file is newer than its compiled output). npm prints its own "> script"
 * banner on stdout, so for machine-readable output use `npm run -s bench -- step --json`
 * or `node bin/bench.js step --json`.
 */
import { bufferBench } from './buffer-bench.js';
import { sqlBench } from './sql-bench.js';
import { stepBench } from './step-bench.js';
import { vecBench } from './vec-bench.js';
import { chaosBench } from './chaos-bench.js';
import { serveBench } from './serve-bench.js';
import { rolloutsBench } from './rollouts-bench.js';
import { vsIntercodeBench } from './vs-intercode.js';
import { taskDirsBench } from './task-dirs-bench.js';
import { forkBench } from './fork-bench.js';
import { idleBench } from './idle-bench.js';
import { sandboxBench } from './sandbox-bench.js';
import type { Bench, BenchIO } from './types.js';

export type { Bench, BenchIO } from './types.js';
export { percentile, percentileOfSorted, summarize, type SampleSummary } from './stats.js';
export { stepBench } from './step-bench.js';
export type { StepBenchResult } from './step-result.js';
export { bufferBench, type BufferBenchResult } from './buffer-bench.js';

/** Every bench, by the name given on the command line. */
export const BENCHES: ReadonlyMap<string, Bench> = new Map([stepBench, vecBench, chaosBench, sqlBench, bufferBench, vsIntercodeBench, serveBench, rolloutsBench, taskDirsBench, forkBench, idleBench, sandboxBench].map((bench) => [bench.name, bench]));

/** Usage text listing the benches. */
export function benchUsage(): string {
  const width = Math.max(...[...BENCHES.keys()].map((name) => name.length));
  const lines = [...BENCHES.values()].map((bench) => `  ${bench.name.padEnd(width)}  ${bench.summary}`);
  return [
    'Usage: npm run bench -- <bench> [options]   (or: intercode bench <bench> [options], node bin/bench.js <bench> [options])',
    '',
    'Benches:',
    ...lines,
    '',
    'Run `npm run bench -- <bench> --help` for the options of one bench.',
    '',
  ].join('\n');
}

/**
 * Runs the bench named by `argv[0]` with the rest of `argv`.
 * @returns the exit code: the bench's own; 0 for `--help`; 2 for a missing or unknown name
 * (after printing the list of benches to stderr).
 */
export async function runBenchCli(argv: readonly string[], io: BenchIO = process): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(benchUsage());
    return 0;
  }
  const bench = name === undefined ? undefined : BENCHES.get(name);
  if (!bench) {
    const problem = name === undefined ? 'name a bench to run' : `unknown bench "${name}"`;
    io.stderr.write(`bench: ${problem}\n\n${benchUsage()}`);
    return 2;
  }
  return bench.run(rest, io);
}
