import { EpisodeUnscorableError } from '../../src/errors.js';
import type { Score } from '../../src/env/types.js';
import { directoryEntries, packEntries } from '../../src/images/tar.js';
import { killProcesses } from '../../src/sandbox/shell/kill-processes.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import type { TaskDir } from './task-dir.js';

/** Where the verifier's files go, and where it writes its reward (Harbor's paths). */
export const TESTS_DIR = '/tests';
export const VERIFIER_LOGS = '/logs/verifier';

/** The most of a reward file or of the verifier's output we read or keep. */
const REWARD_BYTES = 64 * 1024;
const OUTPUT_TAIL = 4096;
/** What a verifier killed by `timeout` exits with (TERM, then KILL after the grace period). */
const TIMED_OUT = new Set([124, 137]);
const KILL_GRACE_SEC = 5;

/** The tests/ folder of a task, packed for /tests (kept per task for the next episode). */
export class TestsArchives {
  private readonly packed = new Map<string, Promise<Buffer>>();

  get(task: TaskDir): Promise<Buffer> {
    let archive = this.packed.get(task.root);
    if (!archive) {
      archive = directoryEntries(task.testsDir, 'tests').then(packEntries);
      this.packed.set(task.root, archive);
      archive.catch(() => this.packed.delete(task.root));
    }
    return archive;
  }
}

/**
 * Makes /tests and /logs/verifier the verifier's own: whatever the agent left there (a
 * reward file, a symbolic link to elsewhere, /logs itself a link or a file) is removed,
 * then both are made afresh as real folders. Run only once the agent's processes are gone.
 */
export function clearVerifierPathsScript(user: string | undefined): string {
  return [
    'set -e',
    // A link or a non-folder at /logs would send the verifier's writes where the agent chose.
    '[ -L /logs ] || { [ -e /logs ] && [ ! -d /logs ]; } && rm -rf /logs',
    `rm -rf ${TESTS_DIR} ${VERIFIER_LOGS}`,
    `mkdir -p ${VERIFIER_LOGS} ${TESTS_DIR}`,
    user ? `chown ${user} ${VERIFIER_LOGS}` : ':',
  ].join('\n');
}

/** The verifier's command: test.sh under `timeout`, as the configured user, its output in test-stdout.txt. */
export function verifierScript(task: TaskDir): string {
  const { user, timeoutSec } = task.config.verifier;
  const asUser = user ? `runuser -u ${user} -- ` : '';
  return [
    `chmod -R a+rX ${TESTS_DIR} && chmod a+x ${TESTS_DIR}/test.sh`,
    `timeout -k ${KILL_GRACE_SEC} ${timeoutSec} ${asUser}bash ${TESTS_DIR}/test.sh > ${VERIFIER_LOGS}/test-stdout.txt 2>&1`,
  ].join('\n');
}

/**
 * `text` as a reward. reward.txt: one number. reward.json: an object of named numbers;
 * the reward is its `reward` member, or its only member; every member is kept as a part.
 * @throws EpisodeUnscorableError reward-invalid saying what was read (truncated).
 */
export function parseReward(file: 'reward.txt' | 'reward.json', text: string): { reward: number; parts: Record<string, number> } {
  const shown = JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text);
  const invalid = (problem: string): never => {
    throw new EpisodeUnscorableError('reward-invalid', `the verifier's ${file} ${problem}: ${shown}`, { file, content: text.slice(0, 200) });
  };
  if (file === 'reward.txt') {
    const trimmed = text.trim();
    const reward = trimmed === '' ? NaN : Number(trimmed);
    if (!Number.isFinite(reward)) invalid('is not a number');
    return { reward, parts: { reward } };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return invalid('is not JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return invalid('is not an object of named numbers');
  const parts: Record<string, number> = {};
  for (const [name, value] of Object.entries(parsed as Record<string, unknown>)) {
    if (typeof value !== 'number' || !Number.isFinite(value)) invalid(`has a member "${name}" that is not a number`);
    parts[name] = value as number;
  }
  const names = Object.keys(parts);
  const reward = 'reward' in parts ? parts.reward : names.length === 1 ? parts[names[0]!] : undefined;
  if (reward === undefined) invalid(names.length === 0 ? 'is empty' : 'has several members and none named "reward"');
  return { reward: reward!, parts };
}

/**
 * Runs `task`'s verifier in `sandbox` after the agent finished: every process but `spare`
 * (the harness's own shell) is killed first, /tests and /logs/verifier are made afresh
 * (nothing the agent left there survives), tests/ is copied to /tests, test.sh runs as the
 * configured user with its env, in `workdir`, under its time limit, and the reward is read
 * from /logs/verifier/reward.txt, else reward.json.
 * @returns the score: the reward, its named parts, the verifier's exit code and output's end.
 * @throws EpisodeUnscorableError: verifier-timeout, reward-missing, reward-invalid,
 *   verifier-error (the agent's processes could not be stopped, or the set-up failed);
 *   SandboxError when the sandbox is lost.
 */
export async function runVerifier(sandbox: Sandbox, task: TaskDir, tests: Buffer, workdir: string, spare: readonly number[]): Promise<Score> {
  if (!(await killProcesses(sandbox, spare))) throw new EpisodeUnscorableError('verifier-error', "the agent's processes could not all be stopped before the verifier");
  const { user, env, timeoutSec } = task.config.verifier;
  const cleared = await sandbox.exec(['bash', '-c', clearVerifierPathsScript(user)], { timeoutMs: 30_000 });
  if (cleared.exitCode !== 0) {
    throw new EpisodeUnscorableError('verifier-error', `could not make ${TESTS_DIR} and ${VERIFIER_LOGS} afresh: ${tail(cleared.output)}`);
  }
  await sandbox.putArchive(tests, '/');
  const started = performance.now();
  const ran = await sandbox.exec(['bash', '-c', verifierScript(task)], { workdir, env, timeoutMs: (timeoutSec + KILL_GRACE_SEC + 30) * 1000 });
  const durationMs = Math.round(performance.now() - started);
  const output = await readFile(sandbox, `${VERIFIER_LOGS}/test-stdout.txt`, OUTPUT_TAIL, true);
  const details = { exitCode: ran.exitCode, durationMs, output: output ?? '' };
  if (ran.timedOut || (ran.exitCode !== null && TIMED_OUT.has(ran.exitCode))) {
    // Nothing of the verifier's may write on: the workspace is restored or removed next.
    await killProcesses(sandbox, spare);
    throw new EpisodeUnscorableError('verifier-timeout', `the verifier ran past its ${timeoutSec} s limit`, details);
  }
  for (const file of ['reward.txt', 'reward.json'] as const) {
    const text = await readFile(sandbox, `${VERIFIER_LOGS}/${file}`, REWARD_BYTES, false);
    if (text === undefined) continue;
    const { reward, parts } = parseReward(file, text);
    return { reward, parts, details: { verifier: { ...details, rewardFile: file } } };
  }
  throw new EpisodeUnscorableError('reward-missing', `the verifier wrote neither ${VERIFIER_LOGS}/reward.txt nor reward.json (it exited with ${ran.exitCode})`, details);
}

/** A regular file's first (or last) `limit` bytes as text; undefined when it is not a regular file. */
async function readFile(sandbox: Sandbox, path: string, limit: number, last: boolean): Promise<string | undefined> {
  const read = await sandbox.exec(['bash', '-c', `[ -f "$1" ] && [ ! -L "$1" ] || exit 3; ${last ? 'tail' : 'head'} -c ${limit} "$1"`, 'read', path], { timeoutMs: 30_000 });
  if (read.exitCode === 3) return undefined;
  if (read.exitCode !== 0) throw new EpisodeUnscorableError('verifier-error', `could not read ${path}: ${tail(read.output)}`);
  return read.output.toString('utf8');
}

const tail = (output: Buffer) => output.toString('utf8').slice(-400);
