import { describe, expect, it } from 'vitest';
import { intercodeSqlReactCommand } from '../../envs/sql/plugin.js';

describe("InterCode's ReAct SQL action parser (replay of on-submit files)", () => {
  it('takes the text of execute[…] up to the last ], dropping what follows', () => {
    expect(intercodeSqlReactCommand("execute[SELECT a FROM t WHERE b = 'x']\nObservation 5")).toBe("SELECT a FROM t WHERE b = 'x'");
    expect(intercodeSqlReactCommand('execute[SELECT a[1] FROM t]')).toBe('SELECT a[1] FROM t');
  });
  it('cuts at the first semicolon, as InterCode ran only that', () => {
    expect(intercodeSqlReactCommand('execute[SELECT 1; SELECT 2]')).toBe('SELECT 1');
  });
  it('leaves an action without execute[…] as it is', () => {
    expect(intercodeSqlReactCommand('submit')).toBe('submit');
  });
});
