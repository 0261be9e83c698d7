/**
 * A small metrics registry and its Prometheus text exposition (format 0.0.4): counters,
 * gauges read at scrape time, and histograms, each with fixed label names. prom-client is
 * not among the project's packages; what `/metrics` needs is this much. It knows nothing
 * of sessions or sandboxes: {@link ServerMetrics} says what is counted.
 */

/** Label values by label name. */
export type Labels = Readonly<Record<string, string>>;

/** What a collected series' reader returns: one value, or values by label set. */
export type Read = () => number | readonly { labels: Labels; value: number }[];

/** A monotonically increasing count (Prometheus `counter`). */
export interface Counter {
  /** Adds `by` (default 1; must be ≥ 0) to the series with `labels`. */
  inc(labels?: Labels, by?: number): void;
}

/** A distribution of observed values (Prometheus `histogram`). */
export interface Histogram {
  observe(value: number, labels?: Labels): void;
}

interface Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram';
  labelNames: readonly string[];
  /** The family's sample lines (without HELP/TYPE). */
  lines(): string[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** The registry a server's parts (and the rollout service) count into; {@link text} is what `GET /metrics` sends. */
export class MetricsRegistry {
  private readonly families = new Map<string, Family>();

  /** @throws TypeError for a name Prometheus refuses, a reused name, or a reserved label. */
  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    const series = new Map<string, { labels: Labels; value: number }>();
    this.add({ name, help, type: 'counter', labelNames, lines: () => [...series.values()].map(({ labels, value }) => sample(name, labels, value)) });
    return {
      inc: (labels = {}, by = 1) => {
        if (!(by >= 0)) throw new RangeError(`${name}: a counter only goes up (got ${by})`);
        const key = keyOf(name, labelNames, labels);
        const entry = series.get(key) ?? { labels, value: 0 };
        entry.value += by;
        series.set(key, entry);
      },
    };
  }

  /** A gauge whose series `read` returns at each scrape (one value, or values by label set). */
  gauge(name: string, help: string, read: Read, labelNames: readonly string[] = []): void {
    this.collected('gauge', name, help, read, labelNames);
  }

  /** A counter kept elsewhere (it must only go up), read at each scrape like {@link gauge}. */
  counterFrom(name: string, help: string, read: Read, labelNames: readonly string[] = []): void {
    this.collected('counter', name, help, read, labelNames);
  }

  /** A histogram with cumulative `buckets` (upper bounds, ascending; +Inf is added). */
  histogram(name: string, help: string, buckets: readonly number[], labelNames: readonly string[] = []): Histogram {
    if (buckets.some((bound, i) => i > 0 && bound <= buckets[i - 1]!)) throw new TypeError(`${name}: buckets must ascend`);
    const series = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>();
    this.add({
      name,
      help,
      type: 'histogram',
      labelNames,
      lines: () =>
        [...series.values()].flatMap(({ labels, counts, sum, count }) => [
          ...buckets.map((bound, i) => sample(`${name}_bucket`, { ...labels, le: String(bound) }, counts[i]!)),
          sample(`${name}_bucket`, { ...labels, le: '+Inf' }, count),
          sample(`${name}_sum`, labels, sum),
          sample(`${name}_count`, labels, count),
        ]),
    });
    return {
      observe: (value, labels = {}) => {
        const key = keyOf(name, labelNames, labels);
        const entry = series.get(key) ?? { labels, counts: buckets.map(() => 0), sum: 0, count: 0 };
        buckets.forEach((bound, i) => {
          if (value <= bound) entry.counts[i]! += 1;
        });
        entry.sum += value;
        entry.count += 1;
        series.set(key, entry);
      },
    };
  }

  /** Every family in the text exposition format (`text/plain; version=0.0.4`). */
  text(): string {
    const out: string[] = [];
    for (const family of this.families.values()) {
      out.push(`# HELP ${family.name} ${family.help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`, `# TYPE ${family.name} ${family.type}`, ...family.lines());
    }
    return `${out.join('\n')}\n`;
  }

  private collected(type: 'counter' | 'gauge', name: string, help: string, read: Read, labelNames: readonly string[]): void {
    this.add({
      name,
      help,
      type,
      labelNames,
      lines: () => {
        const value = read();
        return typeof value === 'number' ? [sample(name, {}, value)] : value.map((entry) => sample(name, entry.labels, entry.value));
      },
    });
  }

  private add(family: Family): void {
    if (!NAME.test(family.name)) throw new TypeError(`metric name ${JSON.stringify(family.name)} is not a Prometheus name`);
    if (this.families.has(family.name)) throw new TypeError(`metric ${family.name} is registered already`);
    for (const label of family.labelNames) {
      if (!LABEL.test(label) || label.startsWith('__') || label === 'le') throw new TypeError(`${family.name}: label name ${JSON.stringify(label)} is not allowed`);
    }
    this.families.set(family.name, family);
  }
}

/** The content type of {@link MetricsRegistry.text}. */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

function keyOf(name: string, labelNames: readonly string[], labels: Labels): string {
  const given = Object.keys(labels);
  if (given.length !== labelNames.length || labelNames.some((label) => labels[label] === undefined)) {
    throw new TypeError(`${name} takes the labels ${JSON.stringify(labelNames)}, got ${JSON.stringify(given)}`);
  }
  return labelNames.map((label) => labels[label]).join('\u0000');
}

function sample(name: string, labels: Labels, value: number): string {
  const pairs = Object.entries(labels).map(([label, text]) => `${label}="${text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')}"`);
  return `${name}${pairs.length > 0 ? `{${pairs.join(',')}}` : ''} ${formatValue(value)}`;
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}
