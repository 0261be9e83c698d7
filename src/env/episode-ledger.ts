import type { Task } from '../datasets/index.js';

/** One action of an episode and the observation it gave. */
export interface EpisodeStep {
  action: string;
  observation: string;
}

/** What an episode has done, as plain data: what a checkpoint carries of every env kind's episode. */
export interface EpisodeSnapshot {
  readonly task: Task | null;
  readonly steps: readonly EpisodeStep[];
  /** The last observation (the first one, the query, before any action, as in InterCode). */
  readonly lastObservation: string;
}

/** An episode that ended, as its InterCode log records it (see EpisodeLogWriter). */
export interface EndedEpisode {
  readonly task: Task;
  readonly steps: readonly EpisodeStep[];
  /** The reward; null when the episode was cut off, never scored. */
  readonly reward: number | null;
  /** The log's `info`: the reward's parts and what they were computed from, or why it was cut off. */
  readonly info: Record<string, unknown>;
}

/**
 * The bookkeeping every env kind keeps of its episode, whatever runs the actions: the task,
 * the steps and the last observation, whether the episode has ended, and how it ended (with
 * the reward, or null when it was cut off) until the next begins.
 */
export class EpisodeLedger implements EpisodeSnapshot {
  private current: Task | null = null;
  private taken: EpisodeStep[] = [];
  private last = '';
  private over = true;
  private ending: EndedEpisode | undefined;

  get task(): Task | null {
    return this.current;
  }

  get steps(): readonly EpisodeStep[] {
    return this.taken;
  }

  get lastObservation(): string {
    return this.last;
  }

  /** Whether the episode has ended (or none began). */
  get ended(): boolean {
    return this.over;
  }

  /** A new episode on `task`, whose first observation is `observation`. */
  begin(task: Task | null, observation: string): void {
    this.continueFrom({ task, steps: [], lastObservation: observation });
  }

  /** The episode `snapshot` describes, going on from there (a restored checkpoint's). */
  continueFrom(snapshot: EpisodeSnapshot): void {
    this.current = snapshot.task;
    this.taken = [...snapshot.steps];
    this.last = snapshot.lastObservation;
    this.over = false;
    this.ending = undefined;
  }

  record(action: string, observation: string): void {
    this.taken.push({ action, observation });
    this.last = observation;
  }

  /** A copy of the episode so far (steps copied: the ledger goes on). */
  snapshot(): EpisodeSnapshot {
    return { task: this.current, steps: [...this.taken], lastObservation: this.last };
  }

  /** Ends the episode with no account of its end (the env closed, or its backend went away with it). */
  stop(): void {
    this.over = true;
    this.ending = undefined;
  }

  /** Ends the episode with `reward` (null: cut off) and the log's `info`. */
  end(reward: number | null, info: Record<string, unknown>): void {
    this.over = true;
    this.ending = this.current ? { task: this.current, steps: this.taken, reward, info } : undefined;
  }

  /** How the last episode ended, from its end until the next begins; undefined when it had no task or was stopped. */
  get endedEpisode(): EndedEpisode | undefined {
    return this.ending;
  }
}
