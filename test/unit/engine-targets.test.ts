import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { parseEngineTarget, parseEngineTargets } from '../../src/sandbox/backends/endpoints.js';
import { pickEngine } from '../../src/sandbox/backends/placement.js';

describe('--engine values', () => {
  it('parses endpoints with and without weights', () => {
    expect(parseEngineTarget('unix:///run/docker-b.sock=2')).toEqual({ endpoint: 'unix:///run/docker-b.sock', weight: 2 });
    expect(parseEngineTarget('/var/run/docker.sock')).toEqual({ endpoint: '/var/run/docker.sock', weight: 1 });
    expect(parseEngineTarget('tcp://127.0.0.1:2375=0.5')).toEqual({ endpoint: 'tcp://127.0.0.1:2375', weight: 0.5 });
    expect(parseEngineTarget('https://127.0.0.1:2376')).toEqual({ endpoint: 'https://127.0.0.1:2376', weight: 1 });
  });

  it.each([
    ['docker.sock', /must be unix:\/\/\/path/],
    ['unix:///a.sock=0', /weight must be a positive number, got "0"/],
    ['unix:///a.sock=-1', /weight must be a positive number/],
    ['unix:///a.sock=two', /weight must be a positive number, got "two"/],
    ['unix:///a.sock=', /weight must be a positive number, got ""/],
    ['tcp://=1', /not a URL/],
  ])('rejects %s naming the flag', (value, message) => {
    const error = (() => {
      try {
        parseEngineTarget(value);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toMatch(/^--engine /);
    expect((error as ConfigError).message).toMatch(message);
  });

  it('defaults to the fallback engine and refuses an endpoint given twice', () => {
    expect(parseEngineTargets([], '/var/run/docker.sock')).toEqual([{ endpoint: '/var/run/docker.sock', weight: 1 }]);
    expect(() => parseEngineTargets(['/a.sock', '/a.sock=2'], '/x')).toThrow(/names \/a.sock twice/);
  });
});

describe('placement', () => {
  const place = (weights: number[], count: number, start: number[] = weights.map(() => 0)) => {
    const engines = weights.map((weight, i) => ({ weight, load: start[i]! }));
    for (let i = 0; i < count; i++) pickEngine(engines)!.load += 1;
    return engines.map((e) => e.load);
  };

  it('follows the weights', () => {
    expect(place([1, 2], 12)).toEqual([4, 8]);
    expect(place([1, 1, 2], 40)).toEqual([10, 10, 20]);
    expect(place([3, 1], 1)).toEqual([1, 0]);
  });

  it('fills the emptier engine first after removals', () => {
    expect(place([1, 2], 6, [4, 0])).toEqual([4, 6]);
  });

  it('has nothing to pick from an empty list', () => {
    expect(pickEngine([])).toBeUndefined();
  });
});
