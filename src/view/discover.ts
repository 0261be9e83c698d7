/**
 * What `intercode view PATH…` shows: every run folder and file under the paths that this
 * project wrote. A folder with `metrics.jsonl` is a training run; `episodes.jsonl` (and the
 * InterCode result log beside it) an eval run; any other `.jsonl` whose first line is an
 * episode a collect output or a saved rollout stream; `<env>-<task>-<time>.json` files a
 * `--trajectories` folder. A `result.json` (what a command printed, its command line,
 * versions) and `run.json` / `<file>.run.json` (settings) are read as the run's facts.
 */

import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { readLines } from './line-file.js';
import { EpisodeLogFolderSource, JsonLinesSource, ResultLogSource, type EpisodeSource } from './episode-source.js';
import { episodeFormat, type EpisodeFormat } from './view-episode.js';

/** A training run: its metrics and the run's folder (the plot page is drawn from them). */
export interface TrainingRun {
  dir: string;
  name: string;
  metrics: string;
}

/** A folder with what it holds. */
export interface RunFolder {
  dir: string;
  /** The folder relative to where the viewer was started (its display name). */
  name: string;
  /** `result.json`: the figures the command printed, its command line, versions (see src/cli/run-folder.ts). */
  result: Record<string, unknown> | null;
  /** `run.json` / `<file>.run.json`: the settings the run was started with. */
  settings: Record<string, unknown> | null;
  /** Indices into {@link Catalogue.sources}. */
  sources: number[];
  training: TrainingRun | null;
}

export interface Catalogue {
  runs: RunFolder[];
  sources: EpisodeSource[];
  /** Files looked at and left out, with why. */
  skipped: { path: string; reason: string }[];
}

const FORMAT_TITLES: Record<EpisodeFormat, string> = {
  'eval-episode': 'eval episodes',
  'rollout-record': 'rollout records (collect --format jsonl)',
  'hf-messages': 'Hugging Face messages (collect --format hf-messages)',
  atif: 'ATIF trajectories (collect --format atif)',
  demonstration: 'demonstrations (collect)',
  'intercode-log': 'InterCode episode logs',
};

/** `<env>-<task index>-<YYYYMMDDTHHMMSSmmmZ>[-n].json`, as src/trajectory/episode-log.ts names them. */
const EPISODE_LOG_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*-\d+-\d{8}T\d{9}Z(-\d+)?\.json$/;
const SKIP_DIRS = new Set(['node_modules', '.git', 'dist']);
const MAX_DEPTH = 6;

async function readJsonObject(path: string): Promise<Record<string, unknown> | null> {
  try {
    const value: unknown = JSON.parse(await readFile(path, 'utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The format of a JSON Lines file's first line that holds an episode (a rollout stream may open with none). */
async function firstLineFormat(path: string): Promise<{ format: EpisodeFormat } | { reason: string }> {
  const { lines } = await readLines(path, 0, { lines: 4, bytes: 64 << 20 });
  if (lines.length === 0) return { reason: 'empty' };
  for (const line of lines) {
    let value: unknown;
    try {
      value = JSON.parse(line.bytes.toString('utf8'));
    } catch {
      return { reason: `line at byte ${line.offset} is not JSON` };
    }
    const record = (value as { type?: unknown; record?: unknown; records?: unknown[] } | null) ?? {};
    const inner = record.type === 'episode' && typeof record.record === 'string' ? JSON.parse(record.record) : record.type === 'group' && typeof record.records?.[0] === 'string' ? JSON.parse(record.records[0]) : value;
    const format = episodeFormat(inner);
    if (format) return { format };
  }
  return { reason: 'its first lines are no episode of a format this project writes' };
}

/** Whether the start of a JSON file looks like an InterCode result log (an object of episodes with `turn_history`). */
async function looksLikeResultLog(path: string): Promise<boolean> {
  const { lines } = await readLines(path, 0, { lines: 64, bytes: 64 << 10 });
  const head = lines.map((l) => l.bytes.toString('utf8')).join('\n');
  return /^\s*\{/.test(head) && /"turn_history"\s*:/.test(head);
}

/**
 * Finds every run under `paths` (folders walked, files taken as they are).
 * @returns the catalogue; paths that do not exist are in `skipped`.
 */
export async function discoverRuns(paths: readonly string[], base = process.cwd()): Promise<Catalogue> {
  const catalogue: Catalogue = { runs: [], sources: [], skipped: [] };
  const folders = new Map<string, RunFolder>();
  const folderOf = (dir: string): RunFolder => {
    let folder = folders.get(dir);
    if (!folder) {
      folder = { dir, name: relative(base, dir) || '.', result: null, settings: null, sources: [], training: null };
      folders.set(dir, folder);
    }
    return folder;
  };
  const addSource = (dir: string, source: EpisodeSource) => {
    if (catalogue.sources.some((s) => s.path === source.path)) return;
    folderOf(dir).sources.push(catalogue.sources.push(source) - 1);
  };

  const visitFile = async (file: string, alone: boolean): Promise<void> => {
    const name = basename(file);
    const dir = dirname(file);
    if (name === 'metrics.jsonl') {
      folderOf(dir).training = { dir, name: basename(dir), metrics: file };
    } else if (name.endsWith('.jsonl')) {
      const found = await firstLineFormat(file);
      if ('format' in found) {
        addSource(dir, new JsonLinesSource(file, `${FORMAT_TITLES[found.format]}: ${name}`));
        const settings = await readJsonObject(`${file}.run.json`);
        if (settings) folderOf(dir).settings ??= settings;
      } else if (alone) catalogue.skipped.push({ path: file, reason: found.reason });
    } else if (name === 'result.json') {
      folderOf(dir).result = await readJsonObject(file);
    } else if (name === 'run.json') {
      folderOf(dir).settings = await readJsonObject(file);
    } else if (EPISODE_LOG_NAME.test(name)) {
      addSource(dir, new EpisodeLogFolderSource(dir, `InterCode episode logs (--trajectories): ${basename(dir)}/`, (n) => EPISODE_LOG_NAME.test(n)));
    } else if (name.endsWith('.json') && !name.endsWith('.run.json') && (await looksLikeResultLog(file))) {
      addSource(dir, new ResultLogSource(file, `InterCode result log: ${name}`));
    } else if (alone) catalogue.skipped.push({ path: file, reason: 'not a file this project writes runs to' });
  };

  const visit = async (path: string, depth: number, alone: boolean): Promise<void> => {
    let info;
    try {
      info = await stat(path);
    } catch {
      catalogue.skipped.push({ path, reason: 'does not exist' });
      return;
    }
    if (!info.isDirectory()) return visitFile(path, alone);
    if (depth > MAX_DEPTH) return;
    const entries = await readdir(path, { withFileTypes: true }).catch(() => []);
    entries.sort((a, b) => a.name.localeCompare(b.name));
    for (const entry of entries) {
      if (entry.isDirectory()) {
        if (!SKIP_DIRS.has(entry.name) && !entry.name.startsWith('.')) await visit(join(path, entry.name), depth + 1, false);
      } else if (entry.isFile()) await visitFile(join(path, entry.name), false);
    }
  };

  for (const path of paths) await visit(resolve(base, path), 0, true);
  catalogue.runs = [...folders.values()].filter((f) => f.sources.length > 0 || f.training !== null || f.result !== null).sort((a, b) => a.name.localeCompare(b.name));
  return catalogue;
}
