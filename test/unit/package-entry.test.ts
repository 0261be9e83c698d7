import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as root from '../../src/index.js';
import { make, registeredEnvIds, UnknownEnvError } from '../../src/index.js';

const ROOT = join(import.meta.dirname, '../..');

describe('package entry point', () => {
  it('registers the built-in environments on import, without touching Docker', () => {
    expect(registeredEnvIds()).toContain('intercode/bash-v1');
  });
  it('rejects an unknown id with a typed error listing the registered ones', () => {
    expect(() => make('intercode/nope-v1')).toThrow(UnknownEnvError);
    expect(() => make('intercode/nope-v1')).toThrow(/Registered ids: .*intercode\/bash-v1/);
  });
  it('holds what a library user needs, not the whole house (the rest is under subpaths)', () => {
    const names = Object.keys(root);
    expect(names).toEqual(expect.arrayContaining(['make', 'pooledVecEnv', 'VecEnv', 'EpisodeScheduler', 'EngineSet', 'createBashEnvs', 'IntercodeError']));
    expect(names.length).toBeLessThan(80);
  });
});

describe('subpath exports', () => {
  const exports = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, string | { types: string; default: string }> }).exports;
  const subpaths = Object.entries(exports).filter((entry): entry is [string, { types: string; default: string }] => typeof entry[1] !== 'string');

  it.each(subpaths)('%s is built from a source module, with its declarations beside it', async (subpath, target) => {
    const source = target.default.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts');
    expect(existsSync(join(ROOT, source))).toBe(true);
    expect(target.types).toBe(target.default.replace(/\.js$/, '.d.ts'));
    const module = (await import(join(ROOT, source))) as Record<string, unknown>;
    expect(Object.keys(module).length, `${subpath} exports something`).toBeGreaterThan(0);
  });
  it('names the subpaths the docs promise', () => {
    expect(Object.keys(exports)).toEqual(expect.arrayContaining(['.', './env', './server', './rollouts', './sandbox', './agents', './eval']));
  });
});
