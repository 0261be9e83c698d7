/**
 * Pairing recorded episodes with the data file's tasks, and what to do when a recording was
 * made against another version of the task file (IC-CTF's GPT-4 logs were recorded against
 * an older `ic_ctf.json` whose queries differ for a few tasks).
 */

import type { Task } from '../datasets/index.js';
import { TrajectoryError } from '../errors.js';
import type { RecordedEpisode } from '../trajectory/index.js';

/**
 * `fail`: stop before replaying anything and name the episodes. `skip`: leave those
 * episodes out (listed in the report). `trust-recording`: replay them against the data
 * file's task at the recorded index (its gold, files and setup), showing the recorded query.
 */
export type QueryMismatchPolicy = 'fail' | 'skip' | 'trust-recording';
export const QUERY_MISMATCH_POLICIES: readonly QueryMismatchPolicy[] = ['fail', 'skip', 'trust-recording'];

/** One recorded episode whose query is not the data file's at its index. */
export interface QueryMismatch {
  taskIndex: number;
  recordedQuery: string;
  /** The data file's query at that index; `null` when the file has no task there. */
  dataQuery: string | null;
  /** Another index where the data file has exactly the recorded query, if any. */
  foundAt: number | null;
  /** What the replay did with it. */
  handling: 'skipped' | 'trusted';
}

/** An episode to replay and the task it is replayed against. */
export interface PairedEpisode {
  episode: RecordedEpisode;
  task: Task;
}

const same = (a: string, b: string) => a.trim() === b.trim();
const clip = (text: string, n = 60) => JSON.stringify(text.length > n ? `${text.slice(0, n)}…` : text);

/** Thrown under `fail` when some recorded queries differ from the data file's; `mismatches` lists them. */
export class QueryMismatchError extends TrajectoryError {
  readonly mismatches: readonly QueryMismatch[];
  constructor(file: string, mismatches: readonly QueryMismatch[]) {
    const shown = mismatches.slice(0, 3).map(describe).join('; ');
    const more = mismatches.length > 3 ? `; and ${mismatches.length - 3} more (episodes ${mismatches.slice(3).map((m) => m.taskIndex).join(', ')})` : '';
    super(
      { file, field: 'query' },
      `${mismatches.length} recorded episode${mismatches.length === 1 ? '' : 's'} not matching the data file: ${shown}${more}. ` +
        'Replay them against the data file\'s tasks with --on-query-mismatch trust-recording, or leave them out with --on-query-mismatch skip',
    );
    this.mismatches = mismatches;
  }
}

function describe(m: QueryMismatch): string {
  if (m.dataQuery === null) return `episode ${m.taskIndex} has no task at that index in the data file`;
  const elsewhere = m.foundAt === null ? '' : ` (the data file has the recorded query at index ${m.foundAt})`;
  return `episode ${m.taskIndex} recorded ${clip(m.recordedQuery)}, data file ${clip(m.dataQuery)}${elsewhere}`;
}

/**
 * Pairs every episode with `tasks[episode.taskIndex]`, comparing queries (leading and
 * trailing white space ignored).
 *
 * @param file the recording's path, for messages.
 * @returns the episodes to replay with their tasks (under `trust-recording` the task's query
 *   is replaced by the recorded one), and every mismatch with how it was handled. An
 *   episode whose index is past the end of `tasks` has nothing to be replayed against:
 *   `trust-recording` leaves it out too (handling `skipped`).
 * @throws QueryMismatchError under `fail` when there is any mismatch.
 */
export function pairEpisodesWithTasks(
  episodes: readonly RecordedEpisode[],
  tasks: readonly Task[],
  policy: QueryMismatchPolicy,
  file: string,
): { paired: PairedEpisode[]; mismatches: QueryMismatch[] } {
  const paired: PairedEpisode[] = [];
  const mismatches: QueryMismatch[] = [];
  for (const episode of episodes) {
    const task = tasks[episode.taskIndex];
    if (task && same(task.query, episode.query)) {
      paired.push({ episode, task });
      continue;
    }
    const foundAt = tasks.findIndex((t) => same(t.query, episode.query));
    const trusted = policy === 'trust-recording' && task !== undefined;
    mismatches.push({
      taskIndex: episode.taskIndex,
      recordedQuery: episode.query,
      dataQuery: task?.query ?? null,
      foundAt: foundAt < 0 ? null : foundAt,
      handling: trusted ? 'trusted' : 'skipped',
    });
    if (trusted) paired.push({ episode, task: { ...task, query: episode.query } });
  }
  if (policy === 'fail' && mismatches.length > 0) throw new QueryMismatchError(file, mismatches);
  return { paired, mismatches };
}
