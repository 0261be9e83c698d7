import { describe, expect, it } from 'vitest';
import { make, registeredEnvIds, UnknownEnvError } from '../../src/index.js';

describe('package entry point', () => {
  it('registers the built-in environments on import, without touching Docker', () => {
    expect(registeredEnvIds()).toContain('intercode/bash-v1');
  });
  it('rejects an unknown id with a typed error listing the registered ones', () => {
    expect(() => make('intercode/nope-v1')).toThrow(UnknownEnvError);
    expect(() => make('intercode/nope-v1')).toThrow(/Registered ids: .*intercode\/bash-v1/);
  });
});
