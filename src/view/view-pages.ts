/**
 * The viewer's pages as HTML strings, the same for the server and the static folder (the
 * links differ: {@link ViewLinks}). Every value from a file goes through {@link showText}
 * (escaped, controls made visible); nothing from a file becomes markup, attribute or URL
 * but through escaping and `encodeURIComponent`, and the pages carry no script.
 */

import { clip, escapeHtml, showText } from './html-text.js';
import { OUTCOMES, type EpisodeEntry, type EpisodeFilter, type EpisodeSource, type Outcome, type SummaryState } from './episode-source.js';
import type { Catalogue } from './discover.js';
import type { RunFigures } from './tally.js';
import type { ViewEpisode, ViewTurn } from './view-episode.js';
import { VIEW_CSP, VIEW_CSS } from './view-style.js';

/** The addresses the pages link to: routes of the server, or files of the static folder. */
export interface ViewLinks {
  home: string;
  /** Source `i`'s first page under `filter`. */
  source(i: number, filter: EpisodeFilter): string;
  episode(i: number, ref: string): string;
  group(i: number, ref: string): string;
  /** The whole text of a clipped field (`turn` -1: the episode's own fields). */
  raw(i: number, ref: string, turn: number, field: RawField): string;
  /** Training run `i`'s learning curves. */
  plot(i: number): string;
}

export type RawField = 'action' | 'observation' | 'reply' | 'query' | 'gold' | 'gold-output';
export const RAW_FIELDS: readonly RawField[] = ['action', 'observation', 'reply', 'query', 'gold', 'gold-output'];

/** Characters of one text shown on an episode page before the rest goes behind a link. */
export const EPISODE_TEXT_LIMIT = 200_000;
/** …on a group page (columns side by side) and in a listing's preview. */
const GROUP_TEXT_LIMIT = 4_000;
const PREVIEW_LIMIT = 120;

const esc = escapeHtml;
const pct = (x: number | null) => (x === null ? '–' : `${(x * 100).toFixed(1)} %`);
const fixed = (x: number | null, digits = 3) => (x === null ? '–' : x.toFixed(digits));

function layout(title: string, links: ViewLinks, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta http-equiv="Content-Security-Policy" content="${esc(VIEW_CSP)}">
<title>${esc(title)} · intercode view</title><style>${VIEW_CSS}</style></head>
<body><nav class="crumbs"><a href="${esc(links.home)}">intercode view</a></nav>
${body}
</body></html>
`;
}

function outcomeOf(e: ViewEpisode): { label: string; css: Outcome } {
  if (e.solved) return { label: 'solved', css: 'solved' };
  if (e.truncated) return { label: e.reward === null ? 'truncated, not scored' : 'truncated', css: 'truncated' };
  return { label: e.reward === null ? 'not scored' : 'failed', css: 'failed' };
}

function partsText(parts: Record<string, number> | null): string {
  if (parts === null) return '–';
  const entries = Object.entries(parts);
  return entries.length === 0 ? '–' : entries.map(([k, v]) => `${showText(k)} ${fixed(v)}`).join(', ');
}

function figuresRow(figures: RunFigures): string {
  return `<td class="num">${figures.episodes}</td><td class="num">${figures.solved}</td><td class="num">${pct(figures.successRate)}</td><td class="num">${fixed(figures.meanReward)}</td><td class="num">${figures.truncated}</td><td class="num">${figures.notScored}</td><td class="num">${fixed(figures.meanTurns, 2)}</td><td>${figures.envs.map(showText).join(', ')}</td>`;
}

const FIGURE_HEADS = '<th>episodes</th><th>solved</th><th>success</th><th>mean reward</th><th>truncated</th><th>not scored</th><th>mean turns</th><th>envs</th>';

function summaryNote(s: SummaryState): string {
  if (s.state === 'counting') return `<span class="note">counting… ${(s.progress * 100).toFixed(0)} % read (reload for more)</span>`;
  if (s.state === 'failed') return `<span class="problem">counting failed: ${showText(s.error ?? '')}</span>`;
  return s.figures.unreadable > 0 ? `<span class="problem">${s.figures.unreadable} unreadable lines</span>` : '';
}

/** A result.json's or settings file's scalar fields as table rows. */
function factsTable(facts: Record<string, unknown>): string {
  const rows = Object.entries(facts).map(([k, v]) => `<tr><th>${showText(k)}</th><td>${showText(typeof v === 'string' ? v : JSON.stringify(v) ?? '')}</td></tr>`);
  return rows.length > 0 ? `<table>${rows.join('')}</table>` : '';
}

/** The list of runs: each folder with its figures, its files, its training curves. */
export function indexPage(catalogue: Catalogue, links: ViewLinks): string {
  const runs = catalogue.runs.map((run, r) => {
    const sources = run.sources.map((i) => {
      const source = catalogue.sources[i]!;
      const s = source.summary();
      return `<tr><td><a href="${esc(links.source(i, {}))}">${showText(source.title)}</a></td>${figuresRow(s.figures)}<td>${summaryNote(s)}</td></tr>`;
    });
    const training = run.training ? `<p>training run <a href="${esc(links.plot(r))}">learning curves of ${showText(run.training.name)}</a></p>` : '';
    const result = run.result ? `<details><summary>result.json</summary>${factsTable(run.result)}</details>` : '';
    const settings = run.settings ? `<details><summary>settings</summary>${factsTable(run.settings)}</details>` : '';
    const table = sources.length > 0 ? `<table><tr><th>file</th>${FIGURE_HEADS}<th></th></tr>${sources.join('')}</table>` : '';
    return `<section class="run"><h2>${showText(run.name)}</h2>${training}${table}${result}${settings}</section>`;
  });
  const skipped = catalogue.skipped.length > 0 ? `<h2>Not shown</h2><ul>${catalogue.skipped.map((s) => `<li>${showText(s.path)}: ${showText(s.reason)}</li>`).join('')}</ul>` : '';
  const empty = catalogue.runs.length === 0 ? '<p>No runs found. Give folders or files: <code>intercode view runs/ my-eval/ rollouts.jsonl</code>.</p>' : '';
  return layout('runs', links, `<h1>Runs</h1>${empty}${runs.join('\n')}${skipped}`);
}

export interface ListingInput {
  index: number;
  source: EpisodeSource;
  filter: EpisodeFilter;
  entries: readonly EpisodeEntry[];
  /** The next page's address; null at the end. */
  nextHref: string | null;
  /** Where this page began (null: the first page), said under the table. */
  cursorNote: string | null;
  partial: boolean;
  problems: readonly { where: string; problem: string }[];
  /** Whether env and task filters are offered (a form: the server only). */
  form: { action: string } | null;
  /** The outcome filters' addresses (all, solved, failed, truncated). */
  outcomeHrefs: Record<'all' | Outcome, string>;
}

function filterBar(input: ListingInput): string {
  const current = input.filter.outcome ?? 'all';
  const choices = (['all', ...OUTCOMES] as const).map((o) => (o === current ? `<span class="active">${o}</span>` : `<a href="${esc(input.outcomeHrefs[o])}">${o}</a>`));
  const form = input.form
    ? `<form method="get" action="${esc(input.form.action)}">${input.filter.outcome ? `<input type="hidden" name="outcome" value="${esc(input.filter.outcome)}">` : ''}` +
      `<label>env <input name="env" value="${esc(input.filter.env ?? '')}"></label> <label>task id <input name="taskId" value="${esc(input.filter.task ?? '')}"></label> <button type="submit">filter</button></form>`
    : '';
  return `<div class="filters">${choices.join('')}${form}</div>`;
}

/** One page of a source's episodes, filtered. */
export function listingPage(input: ListingInput, links: ViewLinks): string {
  const s = input.source.summary();
  const rows = input.entries.map(({ ref, episode: e }) => {
    const outcome = outcomeOf(e);
    const first = clip(e.turns[0]?.action ?? '', PREVIEW_LIMIT);
    const group = e.group ? `<a href="${esc(links.group(input.index, ref))}">${showText(e.group.id)} #${e.group.sample}</a>` : '';
    return (
      `<tr><td><a href="${esc(links.episode(input.index, ref))}">${showText(e.taskId)}</a></td><td>${showText(e.env ?? '–')}</td>` +
      `<td class="num">${fixed(e.reward)}</td><td class="${outcome.css}">${outcome.label}</td><td class="num">${e.turns.length}</td>` +
      `<td>${showText(clip(e.ended, PREVIEW_LIMIT).shown)}</td><td>${group}</td><td><code>${showText(first.shown)}${first.omitted ? '…' : ''}</code></td></tr>`
    );
  });
  const table = rows.length > 0 ? `<table><tr><th>task</th><th>env</th><th>reward</th><th>outcome</th><th>turns</th><th>ended</th><th>group</th><th>first action</th></tr>${rows.join('')}</table>` : '<p>No episode on this page matches.</p>';
  const more = input.nextHref ? `<p><a href="${esc(input.nextHref)}" rel="next">${input.partial ? 'search on' : 'next page'}</a>${input.partial ? ' <span class="note">(the search stopped at its time budget)</span>' : ''}</p>` : '<p class="note">end of file</p>';
  const problems = input.problems.length > 0 ? `<h2>Unreadable</h2><ul>${input.problems.map((p) => `<li class="problem">${showText(p.where)}: ${showText(p.problem)}</li>`).join('')}</ul>` : '';
  return layout(
    input.source.title,
    links,
    `<h1>${showText(input.source.title)}</h1><p class="note">${showText(input.source.path)}</p>` +
      `<table><tr>${FIGURE_HEADS}</tr><tr>${figuresRow(s.figures)}</tr></table>${summaryNote(s)}` +
      `${filterBar(input)}${input.cursorNote ? `<p class="note">${showText(input.cursorNote)}</p>` : ''}${table}${more}${problems}`,
  );
}

/** `text` as a <pre>, clipped at `limit` with a link to the whole. */
function block(text: string, css: string, limit: number, whole: string | null): string {
  const { shown, omitted } = clip(text, limit);
  const rest = omitted > 0 ? `<p class="clipped">${omitted} more characters${whole ? `: <a href="${esc(whole)}">the whole text</a>` : ''}</p>` : '';
  return `<pre class="${css}">${showText(shown)}</pre>${rest}`;
}

function turnSection(turn: ViewTurn, t: number, index: number, ref: string, links: ViewLinks, limit: number): string {
  const meta = [
    `reward ${fixed(turn.reward)}`,
    turn.parts ? `parts ${partsText(turn.parts)}` : null,
    turn.valid === false ? '<span class="failed">invalid action</span>' : null,
    turn.durationMs !== null ? `${(turn.durationMs / 1000).toFixed(3)} s` : null,
    turn.tokens ? `tokens ${turn.tokens.prompt} prompt + ${turn.tokens.completion} completion${turn.tokens.ids ? ', ids' : ''}${turn.tokens.logprobs ? ', logprobs' : ''}` : null,
  ].filter((x) => x !== null);
  const whole = (field: RawField) => (limit === EPISODE_TEXT_LIMIT ? links.raw(index, ref, t, field) : links.episode(index, ref));
  return (
    `<section class="turn"><h3>Turn ${t + 1}</h3><div class="meta">${meta.join(' · ')}</div>` +
    (turn.reply !== null ? `<div>reply</div>${block(turn.reply, 'reply', limit, whole('reply'))}` : '') +
    `<div>action</div>${block(turn.action, 'action', limit, whole('action'))}<div>observation</div>${block(turn.observation, 'observation', limit, whole('observation'))}</section>`
  );
}

/** One episode: the task, every turn, the gold where known, why it ended. */
export function episodePage(index: number, source: EpisodeSource, ref: string, e: ViewEpisode, links: ViewLinks): string {
  const outcome = outcomeOf(e);
  const gold = e.gold === null ? null : Array.isArray(e.gold) ? e.gold.join('\n') : e.gold;
  const facts: [string, string][] = [
    ['env', showText(e.env ?? '–')],
    ['task id', `${showText(e.taskId)}${e.taskIndex !== null && String(e.taskIndex) !== e.taskId ? ` (index ${e.taskIndex})` : ''}`],
    ['reward', `${fixed(e.reward)} <span class="${outcome.css}">${outcome.label}</span>`],
    ['reward parts', partsText(e.parts)],
    ['ended', showText(e.ended)],
    ['turns', String(e.turns.length)],
    ['format', e.format],
    ...(e.model ? [['model', showText(e.model)] as [string, string]] : []),
    ...(e.strategy ? [['strategy', showText(e.strategy)] as [string, string]] : []),
    ...(e.policy ? [['policy', showText(e.policy)] as [string, string]] : []),
    ...(e.group ? [['group', `<a href="${esc(links.group(index, ref))}">${showText(e.group.id)}: sample ${e.group.sample}${e.group.size !== null ? ` of ${e.group.size}` : ''}, side by side</a>`] as [string, string]] : []),
  ];
  const details = Object.keys(e.details).length > 0 ? `<details><summary>details</summary>${block(JSON.stringify(e.details, null, 2), 'details', EPISODE_TEXT_LIMIT, null)}</details>` : '';
  const body =
    `<nav class="crumbs"><a href="${esc(links.source(index, {}))}">${showText(source.title)}</a></nav>` +
    `<h1>Task ${showText(e.taskId)}</h1><h2>Task</h2>${block(e.query, 'query', EPISODE_TEXT_LIMIT, links.raw(index, ref, -1, 'query'))}` +
    `<table>${facts.map(([k, v]) => `<tr><th>${k}</th><td>${v}</td></tr>`).join('')}</table>` +
    (gold !== null ? `<h2>Gold</h2>${block(gold, 'gold', EPISODE_TEXT_LIMIT, links.raw(index, ref, -1, 'gold'))}` : '') +
    (e.goldOutput !== null ? `<h2>Gold output</h2>${block(e.goldOutput, 'gold-output', EPISODE_TEXT_LIMIT, links.raw(index, ref, -1, 'gold-output'))}` : '') +
    `<h2>Turns</h2>${e.turns.map((t, i) => turnSection(t, i, index, ref, links, EPISODE_TEXT_LIMIT)).join('')}${details}`;
  return layout(`task ${e.taskId}`, links, body);
}

/** One group's samples (a task's K episodes) in columns side by side. */
export function groupPage(index: number, source: EpisodeSource, entries: readonly EpisodeEntry[], links: ViewLinks): string {
  const first = entries[0]!.episode;
  const columns = entries.map(({ ref, episode: e }) => {
    const outcome = outcomeOf(e);
    return (
      `<section><h3><a href="${esc(links.episode(index, ref))}">sample ${e.group?.sample ?? 0}</a></h3>` +
      `<div>reward ${fixed(e.reward)} <span class="${outcome.css}">${outcome.label}</span> · ${e.turns.length} turns</div><div class="note">${showText(e.ended)}</div>` +
      e.turns.map((t, i) => turnSection(t, i, index, ref, links, GROUP_TEXT_LIMIT)).join('') +
      '</section>'
    );
  });
  const body =
    `<nav class="crumbs"><a href="${esc(links.source(index, {}))}">${showText(source.title)}</a></nav>` +
    `<h1>Group ${showText(first.group?.id ?? first.taskId)}: ${entries.length} samples</h1>${block(first.query, 'query', GROUP_TEXT_LIMIT, null)}<div class="group">${columns.join('')}</div>`;
  return layout(`group ${first.group?.id ?? first.taskId}`, links, body);
}

/** The text of a raw field (whole, for a clipped one), or undefined when the episode has none there. */
export function rawText(e: ViewEpisode, turn: number, field: RawField): string | undefined {
  if (turn < 0) {
    if (field === 'query') return e.query;
    if (field === 'gold') return e.gold === null ? undefined : Array.isArray(e.gold) ? e.gold.join('\n') : e.gold;
    if (field === 'gold-output') return e.goldOutput ?? undefined;
    return undefined;
  }
  const t = e.turns[turn];
  if (!t) return undefined;
  if (field === 'action') return t.action;
  if (field === 'observation') return t.observation;
  if (field === 'reply') return t.reply ?? undefined;
  return undefined;
}

/** A page that says what went wrong (a missing episode, an unreadable file). */
export function problemPage(title: string, message: string, links: ViewLinks): string {
  return layout(title, links, `<h1>${showText(title)}</h1><p class="problem">${showText(message)}</p>`);
}
