/**
 * Where episodes come from, paged: a JSON Lines file (eval's episodes.jsonl, collect's
 * outputs, a saved serve rollout stream) read by byte offsets; a JSON file of episodes
 * keyed by task (InterCode result logs); a folder of per-episode InterCode logs
 * (`--trajectories`). Summary figures are counted in the background the first time they are
 * asked for, a chunk at a time, so a large file never holds a page up.
 */

import { statSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { setImmediate as yieldToEvents } from 'node:timers/promises';
import { TrajectoryError } from '../errors.js';
import { episodesOf } from '../trajectory/recorded-file.js';
import { lineStartFrom, readLineAt, readLines } from './line-file.js';
import { RunTally, type RunFigures } from './tally.js';
import { episodesIn, toViewEpisode, type ViewEpisode } from './view-episode.js';

export type Outcome = 'solved' | 'failed' | 'truncated';
export const OUTCOMES: readonly Outcome[] = ['solved', 'failed', 'truncated'];

export interface EpisodeFilter {
  outcome?: Outcome;
  /** Exact env name. */
  env?: string;
  /** Exact task id (or task index). */
  task?: string;
}

export function matches(episode: ViewEpisode, filter: EpisodeFilter): boolean {
  if (filter.outcome === 'solved' && !episode.solved) return false;
  if (filter.outcome === 'failed' && episode.solved) return false;
  if (filter.outcome === 'truncated' && !episode.truncated) return false;
  if (filter.env !== undefined && episode.env !== filter.env) return false;
  if (filter.task !== undefined && episode.taskId !== filter.task && String(episode.taskIndex) !== filter.task) return false;
  return true;
}

export interface EpisodeEntry {
  /** The episode's address in its source (a byte offset, a key, a file name). */
  ref: string;
  episode: ViewEpisode;
}

export interface EpisodePage {
  entries: EpisodeEntry[];
  /** The cursor of the next page; null at the end. */
  next: string | null;
  /** Entries that could not be read on this page, with where and why. */
  problems: { where: string; problem: string }[];
  /** The search stopped at its time budget before the page was full (a sparse filter on a large file): `next` goes on. */
  partial: boolean;
}

export interface SummaryState {
  state: 'counting' | 'done' | 'failed';
  figures: RunFigures;
  /** 0..1 of the source read so far. */
  progress: number;
  problems: { where: string; problem: string }[];
  error?: string;
}

export interface EpisodeSource {
  readonly path: string;
  /** What wrote it, in words (e.g. "eval episodes (episodes.jsonl)"). */
  readonly title: string;
  /** A page of `size` episodes that match `filter`, from `cursor` (null: the start). */
  page(cursor: string | null, filter: EpisodeFilter, size: number): Promise<EpisodePage>;
  /** @throws TrajectoryError naming the file and place when `ref` is no episode. */
  episode(ref: string): Promise<ViewEpisode>;
  /** The episodes of `ref`'s group (one task's K samples), `ref`'s own included; just `ref` when it has none. */
  group(ref: string): Promise<EpisodeEntry[]>;
  /** The figures so far; the first call starts counting. */
  summary(): SummaryState;
  /** The figures once every episode is counted. */
  counted(): Promise<SummaryState>;
}

/** How far before an episode's line its group's earlier samples are looked for. */
const GROUP_WINDOW_BYTES = 16 << 20;

/** Bytes the counter reads at a time. */
const COUNT_CHUNK_BYTES = 4 << 20;

/** How long one page may search for matching episodes before it returns what it has. */
const PAGE_BUDGET_MS = 1500;

/** Counts figures over `items` in the background, yielding to requests between chunks. */
class Counter {
  private readonly tally = new RunTally();
  private state: SummaryState['state'] | 'idle' = 'idle';
  private progress = 0;
  private error: string | undefined;
  private done: Promise<void> | undefined;

  constructor(private readonly count: (tally: RunTally, progress: (p: number) => void) => Promise<void>) {}

  summary(): SummaryState {
    if (this.state === 'idle') {
      this.state = 'counting';
      this.done = this.count(this.tally, (p) => (this.progress = p)).then(
        () => {
          this.state = 'done';
          this.progress = 1;
        },
        (error: unknown) => {
          this.state = 'failed';
          this.error = error instanceof Error ? error.message : String(error);
        },
      );
    }
    return this.snapshot();
  }

  async counted(): Promise<SummaryState> {
    this.summary();
    await this.done;
    return this.snapshot();
  }

  private snapshot(): SummaryState {
    return { state: this.state as SummaryState['state'], figures: this.tally.figures(), progress: this.progress, problems: this.tally.problems, ...(this.error ? { error: this.error } : {}) };
  }
}

function parseLine(bytes: Buffer): ViewEpisode[] {
  return episodesIn(JSON.parse(bytes.toString('utf8')));
}

const sizeOf = (path: string): number => {
  try {
    return statSync(path).size;
  } catch {
    return -1;
  }
};

const problemOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** A JSON Lines file of episodes; refs are `<byte offset>` or `<byte offset>.<k>` for the k-th episode of a line that holds several. */
export class JsonLinesSource implements EpisodeSource {
  private counter: Counter;
  /** The file's size when counting began: a file that grew since (a run still writing) is counted again. */
  private countedSize: number;

  constructor(readonly path: string, readonly title: string) {
    this.countedSize = sizeOf(path);
    this.counter = this.newCounter();
  }

  private newCounter(): Counter {
    return new Counter(async (tally, progress) => {
      const size = this.countedSize;
      for (let at: number | null = 0; at !== null; ) {
        const { lines, next } = await readLines(this.path, at, { lines: 4096, bytes: COUNT_CHUNK_BYTES });
        let parsed = 0;
        for (const line of lines) {
          try {
            for (const e of parseLine(line.bytes)) tally.add(e);
          } catch (error) {
            tally.addUnreadable(`byte ${line.offset}`, problemOf(error));
          }
          // Requests go first: parsing waits for them every megabyte or so.
          parsed += line.bytes.length;
          if (parsed > 1 << 20) {
            parsed = 0;
            await yieldToEvents();
          }
        }
        at = next;
        progress(size > 0 ? Math.min(1, (at ?? size) / size) : 1);
        await yieldToEvents();
      }
    });
  }

  summary(): SummaryState {
    const state = this.counter.summary();
    const size = sizeOf(this.path);
    if (state.state === 'counting' || size === this.countedSize) return state;
    this.countedSize = size;
    this.counter = this.newCounter();
    return this.counter.summary();
  }

  counted(): Promise<SummaryState> {
    return this.counter.counted();
  }

  async page(cursor: string | null, filter: EpisodeFilter, size: number): Promise<EpisodePage> {
    const started = performance.now();
    const entries: EpisodeEntry[] = [];
    const problems: EpisodePage['problems'] = [];
    let at: number | null = cursor === null ? 0 : this.offsetOf(cursor);
    while (at !== null) {
      const { lines, next } = await readLines(this.path, at, { lines: Math.max(16, size - entries.length), bytes: 8 << 20 });
      at = next;
      for (const [i, line] of lines.entries()) {
        try {
          const found = parseLine(line.bytes);
          found.forEach((episode, k) => {
            if (matches(episode, filter)) entries.push({ ref: found.length === 1 ? String(line.offset) : `${line.offset}.${k}`, episode });
          });
        } catch (error) {
          problems.push({ where: `byte ${line.offset}`, problem: problemOf(error) });
        }
        if (entries.length >= size) return { entries, next: lines[i + 1]?.offset.toString() ?? (at === null ? null : String(at)), problems, partial: false };
      }
      if (at !== null && performance.now() - started > PAGE_BUDGET_MS) return { entries, next: String(at), problems, partial: true };
    }
    return { entries, next: null, problems, partial: false };
  }

  async episode(ref: string): Promise<ViewEpisode> {
    const { offset, k } = this.refOf(ref);
    const line = await readLineAt(this.path, offset);
    let found: ViewEpisode[];
    try {
      found = parseLine(line.bytes);
    } catch (error) {
      throw new TrajectoryError({ file: this.path, episode: `byte ${offset}` }, problemOf(error), error);
    }
    const episode = found[k];
    if (!episode) throw new TrajectoryError({ file: this.path, episode: `byte ${offset}` }, `holds no episode ${k}`);
    return episode;
  }

  /** The lines around `ref` whose episodes share its group (collect writes a group's samples together). */
  async group(ref: string): Promise<EpisodeEntry[]> {
    const own = await this.episode(ref);
    if (own.group === null) return [{ ref, episode: own }];
    const { offset } = this.refOf(ref);
    // collect writes a group's K lines with one append: they lie within K lines either side.
    // Read from a window before this line (its earlier samples) to K lines after it.
    const size = Math.min(own.group.size ?? 64, 1024);
    const from = await lineStartFrom(this.path, offset - GROUP_WINDOW_BYTES);
    const before = await readLines(this.path, from, { lines: Number.MAX_SAFE_INTEGER, bytes: offset - from });
    const after = await readLines(this.path, offset, { lines: size });
    const lines = [...before.lines.filter((l) => l.offset < offset).slice(-size), ...after.lines];
    const entries: EpisodeEntry[] = [];
    for (const line of lines) {
      let found: ViewEpisode[];
      try {
        found = parseLine(line.bytes);
      } catch {
        continue;
      }
      found.forEach((episode, k) => {
        if (episode.group?.id === own.group!.id && episode.env === own.env) entries.push({ ref: found.length === 1 ? String(line.offset) : `${line.offset}.${k}`, episode });
      });
    }
    return entries.sort((a, b) => a.episode.group!.sample - b.episode.group!.sample);
  }

  private refOf(ref: string): { offset: number; k: number } {
    const match = /^(\d+)(?:\.(\d+))?$/.exec(ref);
    if (!match) throw new TrajectoryError({ file: this.path }, `"${ref}" is not an episode's place (a byte offset)`);
    return { offset: Number(match[1]), k: Number(match[2] ?? 0) };
  }

  private offsetOf(cursor: string): number {
    return this.refOf(cursor).offset;
  }
}

/** Episodes at known keys, each loaded on demand: the base of the whole-file and folder sources. */
abstract class KeyedSource implements EpisodeSource {
  private readonly counter = new Counter(async (tally, progress) => {
    const keys = await this.keys();
    for (const [i, key] of keys.entries()) {
      try {
        tally.add(await this.load(key));
      } catch (error) {
        tally.addUnreadable(key, problemOf(error));
      }
      progress((i + 1) / keys.length);
      if (i % 64 === 63) await yieldToEvents();
    }
  });

  abstract readonly path: string;
  abstract readonly title: string;
  protected abstract keys(): Promise<string[]>;
  protected abstract load(key: string): Promise<ViewEpisode>;

  summary(): SummaryState {
    return this.counter.summary();
  }

  counted(): Promise<SummaryState> {
    return this.counter.counted();
  }

  async page(cursor: string | null, filter: EpisodeFilter, size: number): Promise<EpisodePage> {
    const keys = await this.keys();
    const started = performance.now();
    const entries: EpisodeEntry[] = [];
    const problems: EpisodePage['problems'] = [];
    let i = cursor === null ? 0 : Number(cursor);
    if (!Number.isInteger(i) || i < 0) throw new TrajectoryError({ file: this.path }, `"${cursor}" is not a page cursor`);
    for (; i < keys.length && entries.length < size; i++) {
      if (performance.now() - started > PAGE_BUDGET_MS) return { entries, next: String(i), problems, partial: true };
      try {
        const episode = await this.load(keys[i]!);
        if (matches(episode, filter)) entries.push({ ref: keys[i]!, episode });
      } catch (error) {
        problems.push({ where: keys[i]!, problem: problemOf(error) });
      }
    }
    return { entries, next: i < keys.length ? String(i) : null, problems, partial: false };
  }

  async episode(ref: string): Promise<ViewEpisode> {
    if (!(await this.keys()).includes(ref)) throw new TrajectoryError({ file: this.path, episode: ref }, 'no such episode');
    return this.load(ref);
  }

  async group(ref: string): Promise<EpisodeEntry[]> {
    return [{ ref, episode: await this.episode(ref) }];
  }
}

/** Largest whole-JSON file read (a result log is one JSON object; episodes.jsonl beside it pages instead). */
const MAX_JSON_BYTES = 512 << 20;

/** A JSON file of episodes keyed by task index (InterCode result logs: eval's, and InterCode's own `meta`/`logs` layout). */
export class ResultLogSource extends KeyedSource {
  private data: Promise<Record<string, unknown>> | undefined;

  constructor(readonly path: string, readonly title: string) {
    super();
  }

  private episodes(): Promise<Record<string, unknown>> {
    this.data ??= (async () => {
      const { size } = await stat(this.path);
      if (size > MAX_JSON_BYTES) throw new TrajectoryError({ file: this.path }, `is ${size} bytes, more than the ${MAX_JSON_BYTES} a whole-JSON log is read at; view the run's episodes.jsonl, which pages`);
      let value: unknown;
      try {
        value = JSON.parse(await readFile(this.path, 'utf8'));
      } catch (error) {
        throw new TrajectoryError({ file: this.path }, `is not JSON (${problemOf(error)})`, error);
      }
      return episodesOf(value, this.path).episodes;
    })();
    return this.data;
  }

  protected async keys(): Promise<string[]> {
    return Object.keys(await this.episodes()).sort((a, b) => Number(a) - Number(b) || a.localeCompare(b));
  }

  protected async load(key: string): Promise<ViewEpisode> {
    const value = (await this.episodes())[key];
    try {
      return toViewEpisode(value);
    } catch (error) {
      throw new TrajectoryError({ file: this.path, episode: key }, problemOf(error), error);
    }
  }
}

/** A folder of per-episode InterCode logs (`--trajectories DIR`: one `<env>-<task>-<time>.json` per episode). */
export class EpisodeLogFolderSource extends KeyedSource {
  private names: Promise<string[]> | undefined;

  constructor(readonly path: string, readonly title: string, private readonly isLog: (name: string) => boolean) {
    super();
  }

  protected keys(): Promise<string[]> {
    this.names ??= readdir(this.path).then((names) => names.filter(this.isLog).sort());
    return this.names;
  }

  protected async load(key: string): Promise<ViewEpisode> {
    const file = join(this.path, key);
    try {
      return toViewEpisode(JSON.parse(await readFile(file, 'utf8')));
    } catch (error) {
      throw new TrajectoryError({ file }, problemOf(error), error);
    }
  }
}
