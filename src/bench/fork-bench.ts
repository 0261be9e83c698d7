/**
 * `bench fork`: checkpoint and fork a live bash episode (docs/fork.md) against the way without
 * forks — a new sandbox and the same actions replayed — per written-diff size, in one run.
 */
import { createBashEnvs } from '../../envs/bash/index.js';
import type { SandboxEnv } from '../env/sandbox-env.js';
import { parseBenchArgs, positiveNumber } from './bench-args.js';
import { percentile } from './stats.js';
import type { Bench, BenchIO } from './types.js';

const USAGE = `Usage: npm run bench -- fork [--rounds N] [--json]

Per written-diff size (1 MiB and 50 MiB written to /tmp by the episode), over N rounds
(default 3): checkpoint p50, fork-to-ready p50 for 1 and for 8 children, and a new sandbox
plus the episode's actions replayed; "exact": a child and the parent print the same
(find of /tmp and /testbed: type, size, blocks, links, mode, owner, mtime; md5 of the diff).
--json prints {"1MiB": {...}, "50MiB": {...}}.
`;

/** What each size reports. */
export interface ForkSizeResult {
  checkpointP50Ms: number;
  forkOneP50Ms: number;
  forkEightP50Ms: number;
  replayP50Ms: number;
  exact: boolean;
}

const SIZES = [
  ['1MiB', 1],
  ['50MiB', 50],
] as const;

const PROBE = String.raw`find /tmp /testbed -xdev -printf '%p %y %s %b %n %m %u %g %T@\n' | LC_ALL=C sort; md5sum /tmp/diff; echo "$PWD $K"`;

const episode = (mib: number) => [`dd if=/dev/urandom of=/tmp/diff bs=1M count=${mib} 2>/dev/null`, 'cd /tmp && export K=1'];

async function timed<T>(run: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await run();
  return { ms: performance.now() - started, value };
}

async function closeAll(envs: readonly SandboxEnv[]): Promise<void> {
  await Promise.all(envs.map((env) => env.close()));
}

async function measureSize(mib: number, rounds: number): Promise<ForkSizeResult> {
  const [parent, replayer] = await createBashEnvs({ goldCache: false }, 2);
  try {
    await parent!.reset({ task: 0 });
    for (const action of episode(mib)) await parent!.step(action);
    const checkpoints: number[] = [];
    const one: number[] = [];
    const eight: number[] = [];
    const replay: number[] = [];
    let exact = true;
    for (let round = 0; round < rounds; round++) {
      const checkpoint = await timed(() => parent!.checkpoint());
      checkpoints.push(checkpoint.ms);
      parent!.releaseCheckpoint(checkpoint.value);
      const single = await timed(() => parent!.fork(1));
      one.push(single.ms);
      if (round === 0) {
        const [seenParent, seenChild] = [await parent!.step(PROBE), await single.value[0]!.step(PROBE)];
        exact = seenParent.observation === seenChild.observation;
      }
      await closeAll(single.value);
      const many = await timed(() => parent!.fork(8));
      eight.push(many.ms);
      await closeAll(many.value);
      const replayed = await timed(async () => {
        await replayer!.reset({ task: 0 });
        for (const action of episode(mib)) await replayer!.step(action);
      });
      replay.push(replayed.ms);
    }
    const p50 = (samples: number[]) => Math.round(percentile(samples, 50) * 10) / 10;
    return { checkpointP50Ms: p50(checkpoints), forkOneP50Ms: p50(one), forkEightP50Ms: p50(eight), replayP50Ms: p50(replay), exact };
  } finally {
    await closeAll([parent!, replayer!]);
  }
}

export const forkBench: Bench = {
  name: 'fork',
  summary: 'checkpoint and fork a live bash episode (1 MiB and 50 MiB written) against a new sandbox with the actions replayed',
  async run(args: readonly string[], io: BenchIO): Promise<number> {
    let rounds: number;
    let json: boolean;
    try {
      const values = parseBenchArgs('fork', args, { rounds: { type: 'string' } });
      if (values === 'help') {
        io.stdout.write(USAGE);
        return 0;
      }
      rounds = positiveNumber('--rounds', values.rounds, 3, true);
      json = values.json === true;
    } catch (error) {
      io.stderr.write(`bench fork: ${(error as Error).message}\n\n${USAGE}`);
      return 2;
    }
    const result: Record<string, ForkSizeResult> = {};
    for (const [name, mib] of SIZES) {
      io.stderr.write(`bench fork: ${name}…\n`);
      result[name] = await measureSize(mib, rounds);
    }
    if (json) io.stdout.write(`${JSON.stringify(result)}\n`);
    else for (const [name, r] of Object.entries(result)) io.stdout.write(`${name}: checkpoint ${r.checkpointP50Ms} ms, 1 child ${r.forkOneP50Ms} ms, 8 children ${r.forkEightP50Ms} ms, replay ${r.replayP50Ms} ms, exact ${r.exact}\n`);
    return 0;
  },
};
