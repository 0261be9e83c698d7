/** A run's summary figures, counted episode by episode (a large file's while it is read). */

import type { ViewEpisode } from './view-episode.js';

export interface RunFigures {
  episodes: number;
  solved: number;
  /** solved / episodes; null with no episode. */
  successRate: number | null;
  /** Mean reward of the scored episodes; null when none was scored. */
  meanReward: number | null;
  truncated: number;
  notScored: number;
  meanTurns: number | null;
  envs: string[];
  /** Lines that are no episode (not JSON, another format), with the first few places. */
  unreadable: number;
}

export class RunTally {
  private episodes = 0;
  private solved = 0;
  private scored = 0;
  private rewardSum = 0;
  private truncated = 0;
  private turns = 0;
  private unreadable = 0;
  private readonly envs = new Set<string>();
  /** Where the first unreadable lines are, and why (at most 5). */
  readonly problems: { where: string; problem: string }[] = [];

  add(episode: ViewEpisode): void {
    this.episodes += 1;
    if (episode.solved) this.solved += 1;
    if (episode.reward !== null) {
      this.scored += 1;
      this.rewardSum += episode.reward;
    }
    if (episode.truncated) this.truncated += 1;
    this.turns += episode.turns.length;
    if (episode.env !== null) this.envs.add(episode.env);
  }

  addUnreadable(where: string, problem: string): void {
    this.unreadable += 1;
    if (this.problems.length < 5) this.problems.push({ where, problem });
  }

  figures(): RunFigures {
    const n = this.episodes;
    return {
      episodes: n,
      solved: this.solved,
      successRate: n > 0 ? this.solved / n : null,
      meanReward: this.scored > 0 ? this.rewardSum / this.scored : null,
      truncated: this.truncated,
      notScored: n - this.scored,
      meanTurns: n > 0 ? this.turns / n : null,
      envs: [...this.envs].sort(),
      unreadable: this.unreadable,
    };
  }
}
