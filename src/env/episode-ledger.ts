import type { Task } from '../datasets/index.js';
import { toIntercodeLog, writeEpisodeLog } from '../trajectory/index.js';

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

/** Where an env writes one InterCode-format log per finished episode, and the env's name in it. */
export interface EpisodeLogTarget {
  dir: string;
  /** InterCode's `environment` field (`ic_bash`, `ic_sql`, …). */
  environment: string;
}

/**
 * The bookkeeping every env kind keeps of its episode, whatever runs the actions: the task,
 * the steps and the last observation, whether the episode has ended, and its InterCode log,
 * written once when it ends (with the reward, or null when it was cut off).
 */
export class EpisodeLedger implements EpisodeSnapshot {
  private current: Task | null = null;
  private taken: EpisodeStep[] = [];
  private last = '';
  private over = true;

  constructor(private readonly log?: EpisodeLogTarget) {}

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
  }

  record(action: string, observation: string): void {
    this.taken.push({ action, observation });
    this.last = observation;
  }

  /** A copy of the episode so far (steps copied: the ledger goes on). */
  snapshot(): EpisodeSnapshot {
    return { task: this.current, steps: [...this.taken], lastObservation: this.last };
  }

  /** Ends the episode without a log (the env closed, or its backend went away with it). */
  stop(): void {
    this.over = true;
  }

  /** Ends the episode and writes its log, when the env keeps logs and the episode had a task. */
  async end(reward: number | null, info: Record<string, unknown>): Promise<void> {
    this.over = true;
    if (!this.log || !this.current) return;
    await writeEpisodeLog(this.log.dir, toIntercodeLog({ environment: this.log.environment, task: this.current, steps: this.taken, reward, info }));
  }
}
