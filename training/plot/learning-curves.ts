/**
 * Learning curves of a run as one self-contained HTML page (inline SVG, no scripts, no
 * network): loss, success rate, mean reward and env steps/s against the iteration, with
 * the behaviour-cloning span shaded. Each point has a tooltip with its exact value.
 */
import type { MetricRecord } from '../run/run-files.js';

interface Series {
  label: string;
  color: string;
  points: { x: number; y: number }[];
}

interface Panel {
  title: string;
  series: Series[];
  /** Fixed y range (rates); otherwise from the data. */
  yRange?: [number, number];
}

const WIDTH = 560;
const HEIGHT = 260;
const MARGIN = { left: 56, right: 16, top: 28, bottom: 36 };

const escape = (text: string) => text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

function series(metrics: readonly MetricRecord[], label: string, color: string, phases: MetricRecord['phase'][], field: keyof MetricRecord): Series {
  const points = metrics.filter((m) => phases.includes(m.phase) && typeof m[field] === 'number').map((m) => ({ x: m.iteration, y: m[field] as number }));
  return { label, color, points };
}

/** About five round tick values covering [lo, hi]. */
function ticks(lo: number, hi: number): number[] {
  const span = hi - lo || 1;
  const step = 10 ** Math.floor(Math.log10(span / 5));
  const nice = [1, 2, 5, 10].map((m) => m * step).find((s) => span / s <= 6) ?? step * 10;
  const out: number[] = [];
  for (let v = Math.ceil(lo / nice) * nice; v <= hi + 1e-9; v += nice) out.push(Number(v.toPrecision(10)));
  return out;
}

function renderPanel(panel: Panel, xMax: number, bcSpan: [number, number] | undefined): string {
  const all = panel.series.flatMap((s) => s.points);
  const ys = all.map((p) => p.y);
  const [yLo, yHi] = panel.yRange ?? [Math.min(0, ...ys), Math.max(1e-9, ...ys) * 1.05];
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const sx = (x: number) => MARGIN.left + (x / Math.max(1, xMax)) * plotW;
  const sy = (y: number) => MARGIN.top + plotH - ((y - yLo) / (yHi - yLo || 1)) * plotH;
  const parts: string[] = [`<svg viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" role="img" aria-label="${escape(panel.title)}">`];
  parts.push(`<text x="${MARGIN.left}" y="18" class="title">${escape(panel.title)}</text>`);
  if (bcSpan) parts.push(`<rect x="${sx(bcSpan[0])}" y="${MARGIN.top}" width="${Math.max(1, sx(bcSpan[1]) - sx(bcSpan[0]))}" height="${plotH}" class="bc"><title>behaviour cloning</title></rect>`);
  for (const t of ticks(yLo, yHi)) parts.push(`<line x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${sy(t)}" y2="${sy(t)}" class="grid"/><text x="${MARGIN.left - 6}" y="${sy(t) + 4}" class="tick" text-anchor="end">${t}</text>`);
  for (const t of ticks(0, xMax)) parts.push(`<text x="${sx(t)}" y="${HEIGHT - MARGIN.bottom + 16}" class="tick" text-anchor="middle">${t}</text>`);
  parts.push(`<text x="${MARGIN.left + plotW / 2}" y="${HEIGHT - 4}" class="tick" text-anchor="middle">iteration</text>`);
  parts.push(`<rect x="${MARGIN.left}" y="${MARGIN.top}" width="${plotW}" height="${plotH}" class="frame"/>`);
  panel.series.forEach((s, i) => {
    if (s.points.length === 0) return;
    const path = s.points.map((p) => `${sx(p.x).toFixed(1)},${sy(p.y).toFixed(1)}`).join(' ');
    parts.push(`<polyline points="${path}" fill="none" stroke="${s.color}" stroke-width="1.8"/>`);
    for (const p of s.points) parts.push(`<circle cx="${sx(p.x).toFixed(1)}" cy="${sy(p.y).toFixed(1)}" r="2.6" fill="${s.color}"><title>${escape(s.label)} @ ${p.x}: ${Number(p.y.toPrecision(4))}</title></circle>`);
    parts.push(`<rect x="${MARGIN.left + 8 + i * 130}" y="${MARGIN.top + 6}" width="10" height="10" fill="${s.color}"/><text x="${MARGIN.left + 22 + i * 130}" y="${MARGIN.top + 15}" class="legend">${escape(s.label)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
}

/** The page for `metrics` of run `name`. */
export function renderLearningCurves(name: string, metrics: readonly MetricRecord[]): string {
  const xMax = Math.max(1, ...metrics.map((m) => m.iteration));
  const bc = metrics.filter((m) => m.phase === 'bc').map((m) => m.iteration);
  const bcSpan: [number, number] | undefined = bc.length ? [Math.min(...bc) - 0.5, Math.max(...bc) + 0.5] : undefined;
  const panels: Panel[] = [
    { title: 'Loss', series: [series(metrics, 'corpus imitation', '#17becf', ['corpus'], 'loss'), series(metrics, 'behaviour cloning', '#1f77b4', ['bc'], 'loss'), series(metrics, 'policy gradient', '#d62728', ['pg'], 'loss')] },
    {
      title: 'Success rate (reward 1)',
      yRange: [0, 1],
      series: [
        series(metrics, 'train (greedy)', '#2ca02c', ['baseline', 'retrieval', 'eval'], 'successRate'),
        series(metrics, 'held-out (greedy)', '#9467bd', ['baseline', 'retrieval', 'eval'], 'heldOutSuccessRate'),
        series(metrics, 'train (sampled)', '#ff7f0e', ['pg'], 'successRate'),
      ],
    },
    {
      title: 'Mean reward',
      yRange: [0, 1],
      series: [
        series(metrics, 'train (greedy)', '#2ca02c', ['baseline', 'retrieval', 'eval'], 'meanReward'),
        series(metrics, 'held-out (greedy)', '#9467bd', ['baseline', 'retrieval', 'eval'], 'heldOutMeanReward'),
        series(metrics, 'train (sampled)', '#ff7f0e', ['pg'], 'meanReward'),
      ],
    },
    { title: 'Env steps per second', series: [series(metrics, 'policy gradient', '#d62728', ['pg'], 'envStepsPerSec'), series(metrics, 'evaluation', '#7f7f7f', ['baseline', 'retrieval', 'eval'], 'envStepsPerSec')] },
    { title: 'Behaviour-cloning accuracy', yRange: [0, 1], series: [series(metrics, 'corpus', '#17becf', ['corpus'], 'accuracy'), series(metrics, 'env demonstrations', '#1f77b4', ['bc'], 'accuracy')] },
  ];
  const baseline = metrics.find((m) => m.phase === 'baseline');
  const retrieval = metrics.find((m) => m.phase === 'retrieval');
  const afterBc = metrics.find((m) => m.phase === 'eval');
  const last = metrics.filter((m) => m.phase === 'eval').at(-1);
  const pct = (x: number | undefined) => (x === undefined ? '–' : `${(x * 100).toFixed(1)} %`);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(name)} — learning curves</title>
<style>
body{font:14px system-ui,sans-serif;margin:24px;color:#222}
.panels{display:flex;flex-wrap:wrap;gap:16px}
svg{background:#fff;border:1px solid #ddd}
.title{font-weight:600;font-size:13px}.tick,.legend{font-size:11px;fill:#444}
.grid{stroke:#eee}.frame{fill:none;stroke:#999}.bc{fill:#1f77b4;opacity:.07}
table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #ddd;padding:4px 10px;text-align:right}
</style></head><body>
<h1>${escape(name)}</h1>
<p>${metrics.length} iterations; the shaded span is behaviour cloning. Success rates are the greedy policy's on each task once, except "sampled" (the policy-gradient episodes).</p>
<table><tr><th></th><th>train success</th><th>held-out success</th><th>held-out mean reward</th></tr>
${[['random policy', baseline], ['retrieval, no learning', retrieval], ['after imitation', afterBc], ['last evaluation', last]]
  .filter((row): row is [string, MetricRecord] => row[1] !== undefined)
  .map(([label, m]) => `<tr><th>${label}</th><td>${pct(m.successRate)}</td><td>${pct(m.heldOutSuccessRate)}</td><td>${m.heldOutMeanReward?.toFixed(3) ?? '–'}</td></tr>`)
  .join('\n')}</table>
<div class="panels">
${panels.map((p) => renderPanel(p, xMax, bcSpan)).join('\n')}
</div></body></html>
`;
}
