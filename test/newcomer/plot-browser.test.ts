/**
 * What a person sees of `intercode plot`: the page opened in real headless Chromium. The
 * DOM after layout (a probe script added to a copy of the page measures every chart and
 * curve) and a screenshot (each series' colour painted) show the charts render.
 * Needs Debian's `chromium` (`intercode setup --with-test-tools` installs it); under CI a
 * missing browser is a failure.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { MetricRecord } from '../../training/run/run-files.js';
import { commandExists } from '../../src/setup/host-facts.js';
import { IN_CI } from '../setup/docker.js';
import { processesMentioning } from '../setup/second-dockerd.js';
import { countColour, readPng } from './png.js';

const CLI = join(import.meta.dirname, '../../bin/intercode.js');
const haveChromium = commandExists('chromium');
const dir = mkdtempSync(join(tmpdir(), 'ic-plot-browser-'));

afterAll(() => {
  for (const { pid } of processesMentioning(dir)) process.kill(pid, 'SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** Runs headless Chromium on `page` with a fresh profile; returns stdout. */
function chromium(page: string, args: string[]): string {
  const profile = mkdtempSync(join(dir, 'profile-'));
  const run = spawnSync(
    'chromium',
    ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', `--user-data-dir=${profile}`, ...args, `file://${page}`],
    { encoding: 'utf8', timeout: 90_000, maxBuffer: 64 * 1024 * 1024 },
  );
  if (run.status !== 0) throw new Error(`chromium exited with ${run.status}: ${run.stderr.split('\n').slice(-5).join(' | ')}`);
  return run.stdout;
}

const metrics: MetricRecord[] = [
  { iteration: 0, phase: 'baseline', successRate: 0, heldOutSuccessRate: 0, meanReward: 0.3, heldOutMeanReward: 0.25, envStepsPerSec: 12, elapsedSec: 1 },
  ...[1, 2, 3, 4, 5].map((i): MetricRecord => ({ iteration: i, phase: 'bc', loss: 3 / i, accuracy: i / 5, elapsedSec: 1 + i })),
  { iteration: 6, phase: 'eval', successRate: 0.9, heldOutSuccessRate: 0.2, meanReward: 0.95, heldOutMeanReward: 0.5, envStepsPerSec: 20, elapsedSec: 8 },
  ...[7, 8, 9].map((i): MetricRecord => ({ iteration: i, phase: 'pg', loss: 0.5 - i / 50, successRate: 0.8 + i / 100, meanReward: 0.9, envStepsPerSec: 25 + i, elapsedSec: 2 * i })),
  { iteration: 10, phase: 'eval', successRate: 1, heldOutSuccessRate: 0.25, meanReward: 1, heldOutMeanReward: 0.55, envStepsPerSec: 21, elapsedSec: 22 },
];

interface Probe {
  charts: { label: string; width: number; height: number; curves: { length: number; colour: string; points: number }[]; dots: number }[];
  rows: string[];
}

describe.skipIf(!haveChromium && !IN_CI)('plot page in headless Chromium', () => {
  const run = join(dir, 'run-1');
  let page: string;

  it('intercode plot writes the page', () => {
    if (!haveChromium) throw new Error('chromium is not installed: npx intercode setup --with-test-tools (or apt-get install chromium)');
    spawnSync('mkdir', ['-p', run]);
    writeFileSync(join(run, 'metrics.jsonl'), metrics.map((m) => `${JSON.stringify(m)}\n`).join(''));
    const plot = spawnSync(process.execPath, [CLI, 'plot', run, '--json'], { encoding: 'utf8' });
    expect(plot.status, plot.stderr).toBe(0);
    page = (JSON.parse(plot.stdout) as { out: string }).out;
    expect(page).toBe(join(run, 'curves.html'));
  });

  it('lays out five charts with their curves, points and the summary table', () => {
    const probePage = join(dir, 'probe.html');
    const probe = `<pre id="probe"></pre><script>
      const charts = [...document.querySelectorAll('svg')].map((svg) => {
        const box = svg.getBoundingClientRect();
        const curves = [...svg.querySelectorAll('polyline')].map((line) => ({ length: line.getTotalLength(), colour: getComputedStyle(line).stroke, points: line.points.numberOfItems }));
        return { label: svg.getAttribute('aria-label'), width: box.width, height: box.height, curves, dots: svg.querySelectorAll('circle').length };
      });
      const rows = [...document.querySelectorAll('table tr')].map((tr) => tr.innerText.replace(/\\s+/g, ' ').trim());
      document.getElementById('probe').textContent = JSON.stringify({ charts, rows });
    </script>`;
    writeFileSync(probePage, readFileSync(page, 'utf8').replace('</body>', `${probe}</body>`));
    const dom = chromium(probePage, ['--dump-dom']);
    const json = /<pre id="probe">([^<]*)<\/pre>/.exec(dom)?.[1];
    expect(json, 'the probe script did not run').toBeTruthy();
    const result = JSON.parse(json!.replaceAll('&quot;', '"').replaceAll('&amp;', '&').replaceAll('&lt;', '<').replaceAll('&gt;', '>')) as Probe;
    expect(result.charts.map((c) => c.label)).toEqual(['Loss', 'Success rate (reward 1)', 'Mean reward', 'Env steps per second', 'Behaviour-cloning accuracy']);
    for (const chart of result.charts) {
      expect(chart.width).toBe(562); // 560 + the 1px border on each side
      expect(chart.height).toBe(262);
      for (const curve of chart.curves) expect(curve.length, chart.label).toBeGreaterThan(20);
    }
    const loss = result.charts[0]!;
    expect(loss.curves.map((c) => [c.colour, c.points])).toEqual([['rgb(31, 119, 180)', 5], ['rgb(214, 39, 40)', 3]]);
    expect(loss.dots).toBe(8);
    expect(result.charts[1]!.curves.map((c) => c.points)).toEqual([3, 3, 3]);
    expect(result.rows).toEqual(['train success held-out success held-out mean reward', 'random policy 0.0 % 0.0 % 0.250', 'after imitation 90.0 % 20.0 % 0.500', 'last evaluation 100.0 % 25.0 % 0.550']);
  });

  it('paints every series in a screenshot', () => {
    const shot = join(dir, 'curves.png');
    chromium(page, [`--screenshot=${shot}`, '--window-size=1240,1000', '--hide-scrollbars']);
    const image = readPng(readFileSync(shot));
    expect([image.width, image.height]).toEqual([1240, 1000]);
    const colours = { bc: '#1f77b4', pg: '#d62728', train: '#2ca02c', heldOut: '#9467bd', sampled: '#ff7f0e', evaluation: '#7f7f7f' };
    for (const [series, hex] of Object.entries(colours)) expect(countColour(image, hex), series).toBeGreaterThan(150);
    expect(countColour(image, '#ffffff')).toBeGreaterThan(image.width * image.height * 0.5);
  });
});
