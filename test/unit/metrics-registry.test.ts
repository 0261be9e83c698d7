import { describe, expect, it } from 'vitest';
import { MetricsRegistry } from '../../src/server/metrics.js';

describe('MetricsRegistry (Prometheus text format 0.0.4)', () => {
  it('writes counters, collected series and cumulative histograms with escaped label values', () => {
    const registry = new MetricsRegistry();
    const requests = registry.counter('t_requests_total', 'Requests.\nTwo lines', ['route']);
    requests.inc({ route: 'a"b\\c\nd' });
    requests.inc({ route: 'a"b\\c\nd' }, 2);
    registry.gauge('t_open', 'Open now.', () => 3);
    registry.counterFrom('t_ended_total', 'Ended.', () => [{ labels: { why: 'idle' }, value: 4 }], ['why']);
    const latency = registry.histogram('t_seconds', 'Latency.', [0.1, 1]);
    latency.observe(0.05);
    latency.observe(0.5);
    latency.observe(5);
    expect(registry.text()).toBe(
      [
        '# HELP t_requests_total Requests.\\nTwo lines',
        '# TYPE t_requests_total counter',
        't_requests_total{route="a\\"b\\\\c\\nd"} 3',
        '# HELP t_open Open now.',
        '# TYPE t_open gauge',
        't_open 3',
        '# HELP t_ended_total Ended.',
        '# TYPE t_ended_total counter',
        't_ended_total{why="idle"} 4',
        '# HELP t_seconds Latency.',
        '# TYPE t_seconds histogram',
        't_seconds_bucket{le="0.1"} 1',
        't_seconds_bucket{le="1"} 2',
        't_seconds_bucket{le="+Inf"} 3',
        't_seconds_sum 5.55',
        't_seconds_count 3',
        '',
      ].join('\n'),
    );
  });

  it('refuses what Prometheus would: bad or reused names, reserved labels, wrong label sets, a counter going down', () => {
    const registry = new MetricsRegistry();
    const counter = registry.counter('t_total', 'x', ['a']);
    expect(() => registry.counter('t_total', 'x')).toThrow(TypeError);
    expect(() => registry.counter('1bad', 'x')).toThrow(TypeError);
    expect(() => registry.counter('t_le', 'x', ['le'])).toThrow(TypeError);
    expect(() => registry.counter('t_dunder', 'x', ['__a'])).toThrow(TypeError);
    expect(() => registry.histogram('t_h', 'x', [1, 1])).toThrow(TypeError);
    expect(() => counter.inc({})).toThrow(TypeError);
    expect(() => counter.inc({ a: '1', b: '2' })).toThrow(TypeError);
    expect(() => counter.inc({ a: '1' }, -1)).toThrow(RangeError);
  });
});
