/**
 * `bench fork`: checkpoint and fork a live episode (docs/fork.md) against the way without
 * forks — a new episode and the same actions replayed — per written-diff size, in one run:
 * bash (a sandbox's written files), Python (by replay), embedded SQLite in writable mode
 * (the database's bytes) or MariaDB in writable mode (a logical dump).
 */
import { ConfigError, oneOf } from '../src/errors.js';
import { EngineSet } from '../src/sandbox/backends/engine-set.js';
import { SANDBOX_KINDS, type SandboxKind } from '../src/sandbox/types.js';
import type { SandboxEnv } from '../src/env/sandbox-env.js';
import type { CheckpointableEnv, ForkableEnv, TaskEnv } from '../src/env/types.js';
import { sharedPool } from '../src/vec/make-vec-env.js';
import { parseBenchArgs, positiveNumber } from './bench-args.js';
import { percentile } from './stats.js';
import type { Bench, BenchIO } from './types.js';

const USAGE = `Usage: npm run bench -- fork [--env bash|python|sqlite|mariadb] [--rounds N] [--new-sandboxes] [--sandbox-kind containers|episode-roots|auto] [--json]

Per written-diff size (1 MiB and 50 MiB written by the episode), over N rounds (default 3):
checkpoint p50, restore p50 (one child from a handle already saved, into the other env),
fork-to-ready p50 for 1 and for 8 children (checkpoint included), and a new episode plus the
episode's actions replayed; "exact": a child and the parent print the same observer probe.
--env bash (default): random bytes written to /tmp in a sandbox; the probe is a find of
  /tmp and /testbed (type, size, blocks, links, mode, owner, mtime), the md5 of the diff,
  the shell's cwd and a variable.
--env python: the Python env (checkpoints by replay: docs/fork.md), seeded random bytes
  written to /tmp/diff and a global set; the probe prints the file's md5, size and mode, the
  global and the names of the globals.
--env sqlite: the SQL env on embedded SQLite in writable mode, random 1 MiB blobs inserted
  into a new table; the probe is the schema, the page and freelist counts, and each row's
  length and 32 bytes at a row-dependent offset.
--env mariadb: the SQL env on MariaDB in writable mode (a server per session; checkpoints
  by a logical dump: docs/fork.md), random 1 MiB blobs inserted into a new table with an
  AUTO_INCREMENT key; the probe is SHOW CREATE TABLE, each row's key, length and md5.
Bash and Python envs share a warm pool with 8 spares, as the CLI's envs share one, and
every fork starts with the spares ready (the bench waits for them): a bash child is laid
over a spare in place; the replay's reset takes a spare. --new-sandboxes: no pool, every
child and every replay in a new sandbox (a bash child made from the layer before it starts).
--sandbox-kind K (bash, python): containers (default) or episode-roots (a child laid over a
  spare root, or with --new-sandboxes a new root made from the layer); auto: roots where the
  engine supports them.
--json prints {"1MiB": {...}, "50MiB": {...}}.
`;

/** What each size reports. */
export interface ForkSizeResult {
  checkpointP50Ms: number;
  /** One child from a handle already saved: `restore` into another env of the kind. */
  restoreP50Ms: number;
  forkOneP50Ms: number;
  forkEightP50Ms: number;
  replayP50Ms: number;
  exact: boolean;
}

const SIZES = [
  ['1MiB', 1],
  ['50MiB', 50],
] as const;

type ForkEnv = CheckpointableEnv & ForkableEnv;

/** The bench's envs of one kind, and their warm pool if they share one. */
interface ForkSetup {
  /** The parent, and the env that replays. */
  envs: ForkEnv[];
  /** Resolves once `count` spares are ready (at once without a pool). */
  ready(count: number): Promise<void>;
  /** Closes the envs and their pool. */
  close(): Promise<void>;
}

/** The spares a pooled bench keeps: one per child of the larger fork. */
const SPARES = 8;

/** Two envs, on a warm pool of {@link SPARES} spares when `pooled`. */
async function pooledSetup(envs: SandboxEnv[], pooled: boolean): Promise<ForkSetup> {
  if (!pooled) return unpooled(envs);
  const { pool, restorer } = sharedPool(envs, { pool: { minIdle: SPARES } });
  return {
    envs,
    ready: (count) => pool.ready(count),
    close: async () => {
      await closeAll(envs);
      await pool.close();
      await restorer?.close();
    },
  };
}

/** Envs without a pool (SQL's sessions are no sandboxes of a pool). */
function unpooled(envs: ForkEnv[]): ForkSetup {
  return { envs, ready: async () => undefined, close: () => closeAll(envs) };
}

/** One env kind's episode for the bench. */
interface ForkScenario {
  /** Two envs of the kind (`pooled`: on a warm pool, where the kind has one). */
  envs(pooled: boolean, kind: SandboxKind): Promise<ForkSetup>;
  /** The episode's actions, writing `mib` MiB. */
  actions(mib: number): string[];
  /** What a child must print as the parent does. */
  probe: string;
}

const SCENARIOS: Record<'bash' | 'python' | 'sqlite' | 'mariadb', ForkScenario> = {
  bash: {
    async envs(pooled, kind) {
      const { createBashEnvs } = await import('../envs/bash/index.js');
      return pooledSetup(await createBashEnvs({ goldCache: false, engines: EngineSet.local({ kind }) }, 2), pooled);
    },
    actions: (mib) => [`dd if=/dev/urandom of=/tmp/diff bs=1M count=${mib} 2>/dev/null`, 'cd /tmp && export K=1'],
    probe: String.raw`find /tmp /testbed -xdev -printf '%p %y %s %b %n %m %u %g %T@
' | LC_ALL=C sort; md5sum /tmp/diff; echo "$PWD $K"`,
  },
  python: {
    async envs(pooled, kind) {
      const { createPythonEnvs } = await import('../envs/python/index.js');
      return pooledSetup(await createPythonEnvs({ engines: EngineSet.local({ kind }) }, 2), pooled);
    },
    // Seeded, so that the replay a restore makes gives the same bytes (an unseeded one is refused as not replayable).
    actions: (mib) => [`import random\nrandom.seed(7)\nwith open('/tmp/diff', 'wb') as f: f.write(random.randbytes(${mib} * 2**20))`, 'K = {"kept": [1, 2, 3]}'],
    probe: "import hashlib, os\nprint(hashlib.md5(open('/tmp/diff', 'rb').read()).hexdigest(), os.stat('/tmp/diff').st_size, oct(os.stat('/tmp/diff').st_mode), K, sorted(n for n in globals() if not n.startswith('_')))",
  },
  sqlite: {
    async envs() {
      const { createSqlEnvs } = await import('../envs/sql/index.js');
      return unpooled(await createSqlEnvs({ embedded: true, writable: true }, 2));
    },
    actions: (mib) => ['CREATE TABLE diff (x BLOB)', ...Array.from({ length: mib }, () => 'INSERT INTO diff VALUES (randomblob(1048576))')],
    probe:
      "SELECT (SELECT group_concat(name || ' ' || sql, '; ') FROM sqlite_schema), (SELECT page_count FROM pragma_page_count), (SELECT freelist_count FROM pragma_freelist_count), " +
      '(SELECT group_concat(rowid || \':\' || length(x) || \':\' || hex(substr(x, 1 + (rowid * 7919) % 1048000, 32)), \' \') FROM diff)',
  },
  mariadb: {
    async envs() {
      const { createSqlEnvs } = await import('../envs/sql/index.js');
      return unpooled(await createSqlEnvs({ writable: true }, 2));
    },
    // 1 MiB of random bytes per row: 1024 RANDOM_BYTES(1024) from the sequence engine.
    actions: (mib) => [
      'CREATE TABLE diff (id INT AUTO_INCREMENT PRIMARY KEY, x LONGBLOB)',
      ...Array.from({ length: mib }, () => "INSERT INTO diff (x) SELECT GROUP_CONCAT(RANDOM_BYTES(1024) SEPARATOR '') FROM seq_1_to_1024"),
    ],
    probe: "SELECT (SELECT GROUP_CONCAT(id, ':', LENGTH(x), ':', MD5(x) ORDER BY id) FROM diff), (SELECT auto_increment FROM information_schema.tables WHERE table_schema = 'library' AND table_name = 'diff')",
  },
};

async function timed<T>(run: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await run();
  return { ms: performance.now() - started, value };
}

async function closeAll(envs: readonly TaskEnv[]): Promise<void> {
  await Promise.all(envs.map((env) => env.close()));
}

async function measureSize(scenario: ForkScenario, mib: number, rounds: number, pooled: boolean, kind: SandboxKind): Promise<ForkSizeResult> {
  const setup = await scenario.envs(pooled, kind);
  const [parent, replayer] = setup.envs;
  const episode = scenario.actions(mib);
  try {
    await parent!.reset({ task: 0 });
    for (const action of episode) await parent!.step(action);
    const checkpoints: number[] = [];
    const restores: number[] = [];
    const one: number[] = [];
    const eight: number[] = [];
    const replay: number[] = [];
    let exact = true;
    for (let round = 0; round < rounds; round++) {
      const checkpoint = await timed(() => parent!.checkpoint());
      checkpoints.push(checkpoint.ms);
      // One child from the saved handle: restored into the other env of the kind.
      await setup.ready(SPARES);
      restores.push((await timed(() => replayer!.restore(checkpoint.value))).ms);
      parent!.releaseCheckpoint(checkpoint.value);
      await setup.ready(SPARES);
      const single = await timed(() => parent!.fork(1));
      one.push(single.ms);
      if (round === 0) {
        const [seenParent, seenChild] = [await parent!.step(scenario.probe), await single.value[0]!.step(scenario.probe)];
        exact = seenParent.observation === seenChild.observation;
      }
      await closeAll(single.value);
      await setup.ready(SPARES);
      const many = await timed(() => parent!.fork(8));
      eight.push(many.ms);
      await closeAll(many.value);
      await setup.ready(SPARES);
      const replayed = await timed(async () => {
        await replayer!.reset({ task: 0 });
        for (const action of episode) await replayer!.step(action);
      });
      replay.push(replayed.ms);
    }
    const p50 = (samples: number[]) => Math.round(percentile(samples, 50) * 10) / 10;
    return { checkpointP50Ms: p50(checkpoints), restoreP50Ms: p50(restores), forkOneP50Ms: p50(one), forkEightP50Ms: p50(eight), replayP50Ms: p50(replay), exact };
  } finally {
    await setup.close();
  }
}

export const forkBench: Bench = {
  name: 'fork',
  summary: 'checkpoint and fork a live bash, Python, embedded SQLite or MariaDB episode (1 MiB and 50 MiB written) against a new episode with the actions replayed',
  async run(args: readonly string[], io: BenchIO): Promise<number> {
    let rounds: number;
    let json: boolean;
    let scenario: ForkScenario;
    let pooled: boolean;
    let kind: SandboxKind;
    try {
      const values = parseBenchArgs('fork', args, { rounds: { type: 'string' }, env: { type: 'string' }, 'new-sandboxes': { type: 'boolean' }, 'sandbox-kind': { type: 'string' } });
      if (values === 'help') {
        io.stdout.write(USAGE);
        return 0;
      }
      rounds = positiveNumber('--rounds', values.rounds, 3, true);
      const env = values.env ?? 'bash';
      if (env !== 'bash' && env !== 'python' && env !== 'sqlite' && env !== 'mariadb') throw new ConfigError('--env', `must be bash, python, sqlite or mariadb (got "${String(env)}")`);
      scenario = SCENARIOS[env];
      json = values.json === true;
      pooled = values['new-sandboxes'] !== true;
      kind = values['sandbox-kind'] === undefined ? 'containers' : oneOf('--sandbox-kind', String(values['sandbox-kind']), SANDBOX_KINDS);
      if (values['sandbox-kind'] !== undefined && env !== 'bash' && env !== 'python') throw new ConfigError('--sandbox-kind', `applies to --env bash and python (the ${env} env's sessions are no sandboxes)`);
    } catch (error) {
      io.stderr.write(`bench fork: ${(error as Error).message}\n\n${USAGE}`);
      return 2;
    }
    const result: Record<string, ForkSizeResult> = {};
    for (const [name, mib] of SIZES) {
      io.stderr.write(`bench fork: ${name}…\n`);
      result[name] = await measureSize(scenario, mib, rounds, pooled, kind);
    }
    if (json) io.stdout.write(`${JSON.stringify(result)}\n`);
    else for (const [name, r] of Object.entries(result)) io.stdout.write(`${name}: checkpoint ${r.checkpointP50Ms} ms, restore ${r.restoreP50Ms} ms, 1 child ${r.forkOneP50Ms} ms, 8 children ${r.forkEightP50Ms} ms, replay ${r.replayP50Ms} ms, exact ${r.exact}\n`);
    return 0;
  },
};
