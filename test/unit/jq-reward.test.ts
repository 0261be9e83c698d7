/** The jq env's reward (envs/jq/reward.ts), a pure function of the last output and the gold's: no Docker. */
import { describe, expect, it } from 'vitest';
import { jqScore } from '../../envs/jq/reward.js';

describe('jqScore', () => {
  it('gives 1 for the gold\'s values in order, whatever the key order and white space', () => {
    expect(jqScore('{"b":2,"a":[1, 2]}\n"x"\n', '{"a":[1,2],"b":2}\n"x"\n')).toMatchObject({ reward: 1, parts: { sequence: 1, values: 1 } });
    expect(jqScore('', '').reward).toBe(1);
    // At any depth, and numbers as numbers: 1.0 is 1, "\u0061" is "a".
    expect(jqScore('[{"z":{"y":1,"x":[{"b":1.0,"a":"\\u0061"}]}}]\n', '[{"z":{"x":[{"a":"a","b":1}],"y":1}}]\n').reward).toBe(1);
    expect(jqScore('{"a":[1,2]}\n', '{"a":[2,1]}\n').reward).toBe(0);
  });

  it('gives 0.5 for the right values in another order, and less for each one missing or extra', () => {
    expect(jqScore('2\n1\n', '1\n2\n').reward).toBe(0.5);
    expect(jqScore('1\n', '1\n2\n').reward).toBe(0.25);
    expect(jqScore('1\n2\n3\n4\n', '1\n2\n').reward).toBe(0.25);
    // Values count as a multiset: a repeated right value matches once.
    expect(jqScore('1\n1\n', '1\n2\n').reward).toBe(0.25);
    expect(jqScore('{"a":1}\n{"a":1}\n2\n', '2\n{"a":1}\n{"a":1}\n').reward).toBe(0.5);
  });

  it('tells numbers from strings and arrays from their items', () => {
    expect(jqScore('"4"\n', '4\n').reward).toBe(0);
    expect(jqScore('1\n2\n', '[1,2]\n').reward).toBe(0);
  });

  it('counts a line that is not JSON (an error, a harness note) as a value nothing equals', () => {
    expect(jqScore('jq: error (at /jq/input.json:0): Cannot iterate over null (null)\n', 'jq: error (at /jq/input.json:0): Cannot iterate over null (null)\n').reward).toBe(0);
    expect(jqScore('1\n[intercode: output truncated: showing the first 2 of 9 bytes]', '1\n').reward).toBe(0.25);
  });

  it('keeps both outputs in its details (for logs and play, after the episode)', () => {
    expect(jqScore('1\n', '2\n').details).toEqual({ agent_obs: '1\n', eval_obs: '2\n' });
  });
});
