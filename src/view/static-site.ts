/**
 * `intercode view --static DIR`: the viewer's pages written as files, to share or open
 * without a server. The same pages as the server's; listings are written per outcome
 * filter (all, solved, failed, truncated), page after page; the env and task filters need
 * the server (a form). Every episode gets its page, every group one page, and a text
 * clipped on a page its whole as a .txt file.
 */

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from '../errors.js';
import { discoverRuns, type TrainingRun } from './discover.js';
import { OUTCOMES, type EpisodeSource, type Outcome } from './episode-source.js';
import { EPISODE_TEXT_LIMIT, episodePage, groupPage, indexPage, listingPage, rawText, RAW_FIELDS, type ViewLinks } from './view-pages.js';
import { PAGE_SIZE } from './view-server.js';
import { readdirSync, existsSync } from 'node:fs';

/** A ref as a file-name part: an offset, a key or a log's name, anything else hex-escaped. */
const safe = (ref: string) => ref.replace(/[^A-Za-z0-9._-]/g, (c) => `_${c.charCodeAt(0).toString(16)}`);
const listingFile = (i: number, outcome: 'all' | Outcome, page: number) => `s${i}-${outcome}-${page}.html`;

export interface StaticSiteResult {
  dir: string;
  pages: number;
  episodes: number;
}

/**
 * Writes the viewer for the runs under `paths` into `dir` (created; must be empty or new).
 * @throws ConfigError naming `--static` when `dir` holds other files.
 */
export async function writeStaticSite(options: {
  dir: string;
  paths: readonly string[];
  base: string;
  renderPlot: (run: TrainingRun) => string;
  onProgress?: (line: string) => void;
}): Promise<StaticSiteResult> {
  const { dir } = options;
  if (existsSync(dir) && readdirSync(dir).length > 0) throw new ConfigError('--static', `${dir} is not empty: give a new or empty folder`);
  await mkdir(dir, { recursive: true });
  const catalogue = await discoverRuns(options.paths, options.base);
  const groupFiles = new Map<string, string>();
  const links: ViewLinks = {
    home: 'index.html',
    source: (i, f) => listingFile(i, f.outcome ?? 'all', 1),
    episode: (i, ref) => `s${i}-e-${safe(ref)}.html`,
    group: (i, ref) => groupFiles.get(`${i} ${ref}`) ?? `s${i}-e-${safe(ref)}.html`,
    raw: (i, ref, turn, field) => `s${i}-raw-${safe(ref)}-${turn}-${field}.txt`,
    plot: (r) => `t${r}-curves.html`,
  };
  let pages = 0;
  let episodes = 0;
  const write = async (name: string, text: string) => {
    await writeFile(join(dir, name), text);
    pages += 1;
  };

  const writeEpisodes = async (i: number, source: EpisodeSource, entries: Awaited<ReturnType<EpisodeSource['page']>>['entries']) => {
    for (const { ref, episode } of entries) {
      if (episode.group && !groupFiles.has(`${i} ${ref}`)) {
        const group = await source.group(ref);
        const name = `s${i}-g-${safe(group[0]!.ref)}.html`;
        for (const member of group) groupFiles.set(`${i} ${member.ref}`, name);
        await write(name, groupPage(i, source, group, links));
      }
      await write(links.episode(i, ref), episodePage(i, source, ref, episode, links));
      for (let t = -1; t < episode.turns.length; t++) {
        for (const field of RAW_FIELDS) {
          const text = rawText(episode, t, field);
          if (text !== undefined && text.length > EPISODE_TEXT_LIMIT) await writeFile(join(dir, links.raw(i, ref, t, field)), text);
        }
      }
      episodes += 1;
    }
  };

  for (const [i, source] of catalogue.sources.entries()) {
    options.onProgress?.(`writing ${source.path}`);
    await source.counted();
    for (const outcome of ['all', ...OUTCOMES] as const) {
      const filter = outcome === 'all' ? {} : { outcome };
      const hrefs = Object.fromEntries((['all', ...OUTCOMES] as const).map((o) => [o, listingFile(i, o, 1)])) as Record<'all' | Outcome, string>;
      let cursor: string | null = null;
      for (let n = 1; ; n++) {
        const page = await source.page(cursor, filter, PAGE_SIZE);
        if (outcome === 'all') await writeEpisodes(i, source, page.entries);
        const last = page.next === null;
        await write(
          listingFile(i, outcome, n),
          listingPage(
            { index: i, source, filter, entries: page.entries, nextHref: last ? null : listingFile(i, outcome, n + 1), cursorNote: n > 1 ? `page ${n}` : null, partial: page.partial, problems: page.problems, form: null, outcomeHrefs: hrefs },
            links,
          ),
        );
        if (last) break;
        cursor = page.next;
      }
    }
  }
  for (const [r, run] of catalogue.runs.entries()) if (run.training) await write(links.plot(r), options.renderPlot(run.training));
  await write('index.html', indexPage(catalogue, links));
  return { dir, pages, episodes };
}
