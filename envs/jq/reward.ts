import { isDeepStrictEqual } from 'node:util';
import type { Score } from '../../src/env/types.js';

/** jq's compact output as JSON values, one a line; a line that is no JSON (an error, a harness note) equals nothing. */
const jsonLines = (output: string): unknown[] =>
  output.split('\n').filter((line) => line.trim() !== '').map((line) => {
    try { return JSON.parse(line) as unknown; } catch { return Symbol(line); }
  });

/** The mean of `sequence` (1 for the gold's JSON values in its order; key order, white space aside) and `values` (the values both
 * hold as multisets, over the longer count): 1 only for the gold's output, 0.5 for its values reordered, less for each missing or extra. */
export function jqScore(output: string, expected: string): Score {
  const [got, want] = [jsonLines(output), jsonLines(expected)];
  const unmatched = [...want];
  const shared = got.filter((value) => {
    const i = unmatched.findIndex((other) => isDeepStrictEqual(other, value));
    return i >= 0 && unmatched.splice(i, 1).length === 1;
  }).length;
  const sequence = isDeepStrictEqual(got, want) ? 1 : 0;
  const values = sequence === 1 ? 1 : shared / Math.max(got.length, want.length);
  return { reward: (sequence + values) / 2, parts: { sequence, values }, details: { agent_obs: output, eval_obs: expected } };
}
