import { describe, expect, it } from 'vitest';
import { DEFAULT_SERVE_OPTIONS, parseServeOptions } from '../../bench/serve-options.js';
import { formatServeReport } from '../../bench/serve-bench.js';
import { ConfigError } from '../../src/errors.js';

describe('serve bench options', () => {
  it('defaults to 1, 16 and 64 sessions, 5 s per phase', () => {
    expect(parseServeOptions([])).toEqual(DEFAULT_SERVE_OPTIONS);
    expect(DEFAULT_SERVE_OPTIONS).toEqual({ sessions: [1, 16, 64], durationSec: 5, json: false });
  });

  it('reads --sessions, --duration and --json', () => {
    expect(parseServeOptions(['--sessions', '4,1,4', '--duration', '2.5', '--json'])).toEqual({ sessions: [4, 1], durationSec: 2.5, json: true });
    expect(parseServeOptions(['--help'])).toBe('help');
  });

  it('names the bad option', () => {
    expect(() => parseServeOptions(['--sessions', '0'])).toThrow(ConfigError);
    expect(() => parseServeOptions(['--sessions', '1,x'])).toThrow(/--sessions/);
    expect(() => parseServeOptions(['--sessions', '257'])).toThrow(/1–256/);
    expect(() => parseServeOptions(['--duration', '-1'])).toThrow(/--duration/);
    expect(() => parseServeOptions(['--envs', '4'])).toThrow(/--envs/);
  });

  it('reports each session count with its ratios', () => {
    const row = (sessions: number, eps: number, p50: number) => ({ sessions, trivialStepsPerSec: 100, stepP50Ms: p50, stepP99Ms: 2, goldEpisodesPerSec: eps, goldBelowOne: 0 });
    const text = formatServeReport({ sessions: [4], inProcess: [row(4, 10, 1)], server: [row(4, 9, 1.2)], throughputRatio: [0.9], latencyOverheadMsP50: [0.2] });
    expect(text).toMatch(/4 session\(s\): server\/in-process gold episodes\/s 0\.9, added step p50 0\.2 ms/);
    expect(text).toMatch(/in-process/);
  });
});
