/**
 * Episode logs in InterCode's own log layout (the JSON its `save_trajectory` wrote), so
 * InterCode's analysis tools read our episodes unchanged.
 */

import { randomBytes } from 'node:crypto';
import { link, mkdir, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { TrajectoryError } from '../errors.js';

/** One InterCode episode log. Field names are InterCode's (snake_case on purpose). */
export interface EpisodeLog {
  environment: string;
  /** 0-based index of the task in its dataset. */
  query_idx: number;
  query: string;
  gold: string | string[];
  /** The submitted episode's reward; `null` when the episode was never scored. */
  reward: number | null;
  /** Every action and its observation, in order (InterCode leaves `submit` out). */
  trajectory: { action: string; observation: string }[];
  info: Record<string, unknown>;
}

/** What {@link toIntercodeLog} needs: our episode in our own names. */
export interface EpisodeRecord {
  environment: string;
  task: { index: number; query: string; gold: string | string[] };
  steps: readonly { action: string; observation: string }[];
  reward: number | null;
  info?: Record<string, unknown>;
}

/** How many `-N` suffixes to try before giving up on a name. */
const MAX_SUFFIX = 1000;

const ENVIRONMENT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

function invalid(field: string, problem: string): never {
  throw new TrajectoryError({ file: '<episode log>', field }, problem);
}

/**
 * Builds the InterCode log object for one finished episode.
 *
 * @returns a fresh {@link EpisodeLog} (steps and info are copied, not shared).
 * @throws TrajectoryError when `environment` is not usable in a file name (letters,
 *   digits, `.`, `_`, `-`), `task.index` is not a non-negative integer, or `reward` is
 *   neither `null` nor a finite number.
 */
export function toIntercodeLog(episode: EpisodeRecord): EpisodeLog {
  if (!ENVIRONMENT_NAME.test(episode.environment)) {
    invalid('environment', `must be letters, digits, ".", "_" or "-", got "${episode.environment}"`);
  }
  if (!Number.isInteger(episode.task.index) || episode.task.index < 0) {
    invalid('query_idx', `must be a non-negative integer, got ${episode.task.index}`);
  }
  if (episode.reward !== null && !Number.isFinite(episode.reward)) {
    invalid('reward', `must be null or a finite number, got ${episode.reward}`);
  }
  return {
    environment: episode.environment,
    query_idx: episode.task.index,
    query: episode.task.query,
    gold: Array.isArray(episode.task.gold) ? [...episode.task.gold] : episode.task.gold,
    reward: episode.reward,
    trajectory: episode.steps.map(({ action, observation }) => ({ action, observation })),
    info: { ...(episode.info ?? {}) },
  };
}

/** UTC time as `YYYYMMDDTHHMMSSmmmZ`: sortable, and safe in file names everywhere. */
function timestamp(now: Date): string {
  return now.toISOString().replace(/[-:]/g, '').replace('.', '');
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/**
 * Publishes `temp` as `target` without ever replacing an existing file: a hard link is
 * atomic and fails when `target` exists. Where hard links are not supported the file is
 * renamed after an existence check (atomic, but two writers racing for the same name in
 * the same millisecond could collide there).
 */
async function publish(temp: string, target: string): Promise<boolean> {
  try {
    await link(temp, target);
    await unlink(temp);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EXDEV') throw error;
    if (await exists(target)) return false;
    await rename(temp, target);
    return true;
  }
}

/**
 * Writes one episode log as `<dir>/<environment>-<query_idx>-<timestamp>.json` (2-space
 * indented JSON, like InterCode), creating `dir` if needed. The file appears atomically
 * (written to a temporary file, then published) and never replaces an existing one:
 * when the name is taken, `-1`, `-2`, … is added before `.json`.
 *
 * @param options.now the time used in the file name (default: now).
 * @returns the path of the new file.
 * @throws TrajectoryError when the log is invalid (see {@link toIntercodeLog}) or cannot
 *   be serialised (a cycle, a BigInt in `info`), or when the file cannot be written.
 */
export async function writeEpisodeLog(dir: string, log: EpisodeLog, options: { now?: Date } = {}): Promise<string> {
  const checked = toIntercodeLog({
    environment: log.environment,
    task: { index: log.query_idx, query: log.query, gold: log.gold },
    steps: log.trajectory,
    reward: log.reward,
    info: log.info,
  });
  let text: string;
  try {
    text = `${JSON.stringify(checked, null, 2)}\n`;
  } catch (error) {
    throw new TrajectoryError({ file: dir, field: 'info' }, 'cannot be written as JSON', error);
  }
  const base = `${checked.environment}-${checked.query_idx}-${timestamp(options.now ?? new Date())}`;
  const temp = join(dir, `.${base}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    await mkdir(dir, { recursive: true });
    await writeFile(temp, text, { flag: 'wx' });
    for (let n = 0; n < MAX_SUFFIX; n++) {
      const target = join(dir, n === 0 ? `${base}.json` : `${base}-${n}.json`);
      if (await publish(temp, target)) return target;
    }
    throw Object.assign(new Error(`${base}.json to ${base}-${MAX_SUFFIX - 1}.json all exist`), { code: 'EEXIST' });
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
    throw new TrajectoryError({ file: dir }, `cannot write the episode log (${code})`, error);
  }
}
