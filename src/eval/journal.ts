/**
 * A run directory: `run.json` (the settings the run was started with) and
 * `episodes.jsonl` (one finished episode per line, appended as each finishes). A run that
 * was interrupted resumes from it: finished tasks are never played again.
 */

import { appendFile, mkdir, readFile, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseJson } from '../datasets/json.js';
import { ConfigError, DatasetError, TrajectoryError } from '../errors.js';
import type { EvalEpisodeLog } from './result-log.js';

/** The settings that make two runs the same experiment (a resumed run must match them). */
export type RunSettings = Record<string, string | number | boolean | null>;

const SETTINGS_FILE = 'run.json';
const EPISODES_FILE = 'episodes.jsonl';

export class RunJournal {
  private writing: Promise<void> = Promise.resolve();

  private constructor(readonly dir: string, readonly finished: Map<number, EvalEpisodeLog>) {}

  /**
   * Opens `dir` for a run with `settings`: creates it, or reads the episodes a previous
   * run with the same settings finished. A last line cut short (the process was killed
   * while writing it) is dropped.
   * @throws ConfigError naming `--out` when `dir` holds a run with other settings.
   * @throws TrajectoryError naming the file (and line) when `run.json` is not a JSON object.
   * @throws TrajectoryError naming the file and line when an earlier line is not an episode.
   */
  static async open(dir: string, settings: RunSettings): Promise<RunJournal> {
    await mkdir(dir, { recursive: true });
    const settingsPath = join(dir, SETTINGS_FILE);
    const previous = await readSettings(settingsPath);
    if (previous) {
      const what = changedSettings(previous, settings);
      if (what) throw new ConfigError('--out', `${dir} holds a run with other settings (${what}); use another directory to start a new run`);
    } else {
      await writeFile(settingsPath, `${JSON.stringify(settings, null, 2)}\n`);
    }
    return new RunJournal(dir, await readEpisodes(join(dir, EPISODES_FILE)));
  }

  /** Records a finished episode (appends are serialised, one line each). */
  add(episode: EvalEpisodeLog): Promise<void> {
    this.finished.set(episode.task_id, episode);
    const line = `${JSON.stringify(episode)}\n`;
    this.writing = this.writing.then(() => appendFile(join(this.dir, EPISODES_FILE), line));
    return this.writing;
  }

  /** Waits for every append. */
  flush(): Promise<void> {
    return this.writing;
  }
}

/**
 * The settings of the run already in `dir`, or null when there is none (checked before a
 * command starts sandboxes, so a broken folder fails first).
 * @throws TrajectoryError naming the file (and line) when `run.json` is not a JSON object.
 */
export function readRunSettings(dir: string): Promise<RunSettings | null> {
  return readSettings(join(dir, SETTINGS_FILE));
}

async function readSettings(path: string): Promise<RunSettings | null> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return null;
  }
  return parseRunSettings(text, path);
}

/**
 * The settings a run wrote to `path` (its text `text`).
 * @throws TrajectoryError naming the file (and line) when the text is not a JSON object.
 */
export function parseRunSettings(text: string, path: string): RunSettings {
  let value: unknown;
  try {
    value = parseJson(text, { file: path });
  } catch (error) {
    if (!(error instanceof DatasetError)) throw error;
    throw new TrajectoryError(error.location, String(error.details.problem), error.cause);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new TrajectoryError({ file: path }, 'must be a JSON object (the settings of a run)');
  return value as RunSettings;
}

/** The settings that differ between a run's `previous` ones and `now`, said for a message; undefined when none does. */
export function changedSettings(previous: Readonly<Record<string, unknown>>, now: Readonly<Record<string, unknown>>): string | undefined {
  const changed = Object.keys({ ...previous, ...now }).filter((k) => previous[k] !== now[k]);
  return changed.length > 0 ? changed.map((k) => `${k}: ${JSON.stringify(previous[k])} there, ${JSON.stringify(now[k])} now`).join('; ') : undefined;
}

async function readEpisodes(path: string): Promise<Map<number, EvalEpisodeLog>> {
  const episodes = new Map<number, EvalEpisodeLog>();
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return episodes;
  }
  // Lines end with '\n'; whatever follows the last one is a line cut short by a kill.
  const end = text.lastIndexOf('\n') + 1;
  const lines = text.slice(0, end).split('\n').slice(0, -1);
  for (const [i, line] of lines.entries()) {
    if (line.trim() === '') continue;
    let episode: EvalEpisodeLog;
    try {
      episode = JSON.parse(line) as EvalEpisodeLog;
    } catch (error) {
      throw new TrajectoryError({ file: path, line: i + 1 }, 'is not a JSON episode', error);
    }
    if (episode === null || typeof episode !== 'object' || Array.isArray(episode)) throw new TrajectoryError({ file: path, line: i + 1 }, 'is not a JSON episode');
    if (!Number.isInteger(episode.task_id)) throw new TrajectoryError({ file: path, line: i + 1, field: 'task_id' }, 'must be an integer');
    episodes.set(episode.task_id, episode);
  }
  if (end < text.length) await truncate(path, Buffer.byteLength(text.slice(0, end)));
  return episodes;
}
