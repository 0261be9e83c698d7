/**
 * The runs a viewer shows, found again on every visit to its front page (a run started
 * after the viewer appears on reload) while each file keeps its number and its counts.
 */

import { discoverRuns, type Catalogue, type RunFolder } from './discover.js';
import type { EpisodeSource } from './episode-source.js';

export class ViewCatalogue {
  private readonly sources: EpisodeSource[] = [];
  private runs: RunFolder[] = [];
  private skipped: Catalogue['skipped'] = [];

  constructor(private readonly paths: readonly string[], private readonly base: string) {}

  /** Looks for runs again; files seen before keep their number. */
  async refresh(): Promise<Catalogue> {
    const found = await discoverRuns(this.paths, this.base);
    const numbers = found.sources.map((source) => {
      const known = this.sources.findIndex((s) => s.path === source.path);
      return known >= 0 ? known : this.sources.push(source) - 1;
    });
    this.runs = found.runs.map((run) => ({ ...run, sources: run.sources.map((i) => numbers[i]!) }));
    this.skipped = found.skipped;
    return this.current();
  }

  current(): Catalogue {
    return { runs: this.runs, sources: this.sources, skipped: this.skipped };
  }
}
