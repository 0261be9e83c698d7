/**
 * A rollout output file that a stopped `collect` resumes: `<out>` (one episode per line,
 * each task's group of K written with one append) and `<out>.run.json` (the settings).
 * Opening it again with the same settings keeps the complete groups and plays only the
 * other tasks; a line torn by a kill, and the lines of a group written only in part, are dropped.
 */

import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { ConfigError, TrajectoryError } from '../errors.js';
import { changedSettings, parseRunSettings } from '../eval/index.js';

export type RolloutSettings = Record<string, string | number | boolean | null>;

/** The task id of a line in any of the formats (records and hf-messages: `task_id`; ATIF: `extra.task_id`). */
function taskIdOf(line: Record<string, unknown>): unknown {
  return typeof line.schema_version === 'string' ? (line.extra as { task_id?: unknown } | undefined)?.task_id : line.task_id;
}

export class RolloutFile {
  private constructor(
    readonly path: string,
    /** Task ids whose K samples are in the file. */
    readonly done: ReadonlySet<string>,
    /** Episodes kept from an earlier run. */
    readonly resumed: number,
  ) {}

  /**
   * Opens `path` for a run with `settings` and groups of `samplesPerTask`: resumes when
   * `<path>.run.json` holds the same settings, else starts the file afresh.
   * @throws ConfigError naming `--out` when the file belongs to a run with other settings.
   * @throws TrajectoryError naming the file (and line) when `<path>.run.json` is not a JSON
   *   object, or naming file and line when a complete line is not a JSON object.
   */
  static open(path: string, settings: RolloutSettings, samplesPerTask: number): RolloutFile {
    const settingsPath = `${path}.run.json`;
    const previous = existsSync(settingsPath) ? parseRunSettings(readFileSync(settingsPath, 'utf8'), settingsPath) : null;
    if (previous) {
      const what = changedSettings(previous, settings);
      if (what) throw new ConfigError('--out', `${path} holds rollouts with other settings (${what}); use another file, or delete ${path} and ${settingsPath}`);
    }
    if (!previous || !existsSync(path)) {
      writeFileSync(path, '');
      writeFileSync(settingsPath, `${JSON.stringify(settings, null, 2)}\n`);
      return new RolloutFile(path, new Set(), 0);
    }
    const text = readFileSync(path, 'utf8');
    const complete = text.slice(0, text.lastIndexOf('\n') + 1);
    const lines = complete.split('\n').filter((l) => l.trim() !== '');
    const byTask = new Map<string, string[]>();
    lines.forEach((raw, i) => {
      let value: unknown;
      try {
        value = JSON.parse(raw);
      } catch (error) {
        throw new TrajectoryError({ file: path, line: i + 1 }, 'is not JSON (a line of this file was changed by hand?)', error);
      }
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        throw new TrajectoryError({ file: path, line: i + 1 }, 'is not a JSON object (a line of this file was changed by hand?)');
      }
      const id = String(taskIdOf(value as Record<string, unknown>));
      byTask.set(id, [...(byTask.get(id) ?? []), raw]);
    });
    const kept = [...byTask.entries()].filter(([, group]) => group.length >= samplesPerTask);
    const keptLines = kept.flatMap(([, group]) => group);
    if (keptLines.length !== lines.length || complete.length !== text.length) writeFileSync(path, keptLines.map((l) => `${l}\n`).join(''));
    return new RolloutFile(path, new Set(kept.map(([id]) => id)), keptLines.length);
  }

  /** Appends a group's lines with one write. */
  append(lines: readonly string[]): void {
    appendFileSync(this.path, lines.map((l) => `${l}\n`).join(''));
  }
}
