/**
 * `intercode view` as a person uses it: the command serves runs made by the project's own
 * writers, headless Chromium (over the DevTools protocol) opens the front page, clicks into
 * an eval run and a collect file, into an episode and a group, and the test reads the
 * rendered DOM: the actions and rewards the files hold, hostile observations as plain text.
 * Needs Debian's `chromium` (`intercode setup --with-test-tools` installs it); under CI a
 * missing browser is a failure.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandExists } from '../../src/setup/host-facts.js';
import { EPISODE_TEXT_LIMIT } from '../../src/view/view-pages.js';
import { IN_CI } from '../setup/docker.js';
import { tempDir } from '../setup/temp-dirs.js';
import { readPng } from '../newcomer/png.js';
import { Browser } from './cdp.js';
import { makeProjectRuns, type ProjectRuns } from './project-runs.js';

const CLI = join(import.meta.dirname, '../../bin/intercode.js');
const haveChromium = commandExists('chromium');

let root: string;
let runs: ProjectRuns;
let view: ChildProcess;
let url: string;
let browser: Browser;

beforeAll(async () => {
  if (!haveChromium) return;
  root = tempDir('ic-view-browser-');
  runs = await makeProjectRuns(root, { hostile: true });
  view = spawn(process.execPath, [CLI, 'view', root, '--port', '0', '--json'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  url = await new Promise<string>((resolve, reject) => {
    let out = '';
    let err = '';
    view.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('\n')) resolve((JSON.parse(out.split('\n')[0]!) as { url: string }).url);
    });
    view.stderr!.on('data', (c: Buffer) => (err += c.toString()));
    view.once('exit', (code) => reject(new Error(`intercode view exited with ${code}: ${err}`)));
  });
  browser = await Browser.launch();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  if (view && view.exitCode === null) {
    const exited = new Promise<number | null>((resolve) => view.once('exit', resolve));
    view.kill('SIGTERM');
    expect(await exited).toBe(143);
  }
});

interface EpisodeDom {
  title: string;
  heading: string;
  actions: string[];
  observations: string[];
  metas: string[];
  facts: Record<string, string>;
  scripts: number;
  images: number;
}

const readEpisode = () =>
  browser.evaluate<EpisodeDom>(`({
    title: document.title,
    heading: document.querySelector('h1').textContent,
    actions: [...document.querySelectorAll('pre.action')].map((p) => p.textContent),
    observations: [...document.querySelectorAll('pre.observation')].map((p) => p.textContent),
    metas: [...document.querySelectorAll('.turn .meta')].map((m) => m.textContent),
    facts: Object.fromEntries([...document.querySelectorAll('table tr')].map((tr) => [tr.querySelector('th')?.textContent, tr.querySelector('td')?.textContent])),
    scripts: document.querySelectorAll('script').length,
    images: document.querySelectorAll('img').length,
  })`);

/** Clicks the link whose text is `text` (the first one). */
async function clickLink(text: string): Promise<void> {
  const href = await browser.evaluate<string | null>(`[...document.querySelectorAll('a')].find((a) => a.textContent === ${JSON.stringify(text)})?.getAttribute('href') ?? null`);
  expect(href, `a link "${text}" on ${await browser.evaluate('location.href')}`).not.toBeNull();
  await browser.click(`a[href="${href}"]`);
}

describe.skipIf(!haveChromium && !IN_CI)('intercode view in headless Chromium', () => {
  it('lists the runs with their figures, clicks into an eval episode, and shows its actions and rewards', async () => {
    if (!haveChromium) throw new Error('chromium is not installed: npx intercode setup --with-test-tools (or apt-get install chromium)');
    await browser.open(url);
    const headings = await browser.evaluate<string[]>(`[...document.querySelectorAll('h2')].map((h) => h.textContent)`);
    expect(headings).toEqual(expect.arrayContaining(['eval-run', 'collect', 'trajectories']));
    await clickLink('eval episodes: episodes.jsonl');
    const rows = await browser.evaluate<string[][]>(`[...document.querySelectorAll('table')[1].querySelectorAll('tr')].slice(1).map((tr) => [...tr.children].map((td) => td.textContent))`);
    expect(rows.map((r) => r[0])).toEqual(['0', '1', '2'].filter((t) => rows.some((r) => r[0] === t)));
    await clickLink('0');
    const dom = await readEpisode();
    const line = readFileSync(join(runs.evalDir, 'episodes.jsonl'), 'latin1').split('\n').map((l) => { try { return JSON.parse(l); } catch { return null; } }).find((l) => l?.task_id === 0);
    expect(dom.heading).toBe('Task 0');
    expect(dom.actions).toEqual(line.turn_history.actions);
    expect(dom.metas.map((m) => m.split(' · ')[0])).toEqual(line.turn_history.rewards.map((r: number) => `reward ${r.toFixed(3)}`));
    expect(dom.facts.reward).toBe('1.000 solved');
    expect(dom.facts.ended).toBe('solved (the episode stops at reward 1)');
  });

  it('opens a collect file, an episode of it and its group side by side', async () => {
    await browser.open(url);
    await clickLink('Hugging Face messages (collect --format hf-messages): rollouts-hf-messages.jsonl');
    const records = readFileSync(runs.rollouts['hf-messages'], 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    await clickLink(records[0].task_id);
    const dom = await readEpisode();
    expect(dom.actions).toEqual(records[0].actions);
    expect(dom.facts.reward).toMatch(new RegExp(`^${records[0].reward.toFixed(3)} `));
    expect(dom.facts.group).toBe(`${records[0].task_id}: sample 0 of 3, side by side`);
    await clickLink(dom.facts.group!);
    const columns = await browser.evaluate<string[]>(`[...document.querySelectorAll('.group > section > h3')].map((h) => h.textContent)`);
    expect(columns).toEqual(['sample 0', 'sample 1', 'sample 2']);
    const widths = await browser.evaluate<number[]>(`[...document.querySelectorAll('.group > section')].map((s) => Math.round(s.getBoundingClientRect().left))`);
    expect(new Set(widths).size).toBe(3); // side by side, not stacked
  });

  it('renders hostile observations as text: no script runs, escapes and invalid UTF-8 visible, 10 MB clipped', async () => {
    const violations = browser.collect('Runtime.consoleAPICalled');
    await browser.open(url);
    await clickLink('eval episodes: episodes.jsonl');
    await clickLink('1');
    const dom = await readEpisode();
    expect(dom.title).toBe('task 1 · intercode view');
    expect([dom.scripts, dom.images]).toEqual([0, 0]);
    const hostile = dom.observations[0]!;
    expect(hostile).toContain(`<script>document.title='pwned'</script></textarea></pre><img src=x onerror="document.title='pwned'">`);
    expect(hostile).toContain('\u241b[31mRED\u241b[0m');
    expect(hostile).toContain('\ufffd');
    expect(dom.observations[1]).toHaveLength(EPISODE_TEXT_LIMIT);
    const clipped = await browser.evaluate<string>(`document.querySelector('.clipped').textContent`);
    expect(clipped).toBe(`${10 * 1024 * 1024 - EPISODE_TEXT_LIMIT} more characters: the whole text`);
    expect(violations).toEqual([]);
    const shot = readPng(await browser.screenshot());
    expect(shot.width).toBe(1280);
    expect(shot.height).toBeGreaterThan(500);
  });
});
