import type { Score } from '../../src/env/types.js';

/** A JSON value as text with every object's keys sorted: two values are equal when their texts are. */
const canonical = (value: unknown) => JSON.stringify(value, (_key, v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1))) : v));

/** jq's compact output as canonical texts, one value a line; a line that is no JSON (an error, a harness note) gets a text nothing equals. */
const jsonLines = (output: string, side: string): string[] =>
  output.split('\n').filter((line) => line.trim() !== '').map((line, i) => {
    try { return canonical(JSON.parse(line)); } catch { return `\0${side} ${i}`; }
  });

/** The mean of `sequence` (1 for the gold's JSON values in its order; key order, white space aside) and `values` (the values both
 * hold as multisets, over the longer count): 1 only for the gold's output, 0.5 for its values reordered, less for each missing or extra. */
export function jqScore(output: string, expected: string): Score {
  const [got, want] = [jsonLines(output, 'output'), jsonLines(expected, 'expected')];
  const unmatched = new Map<string, number>();
  for (const value of want) unmatched.set(value, (unmatched.get(value) ?? 0) + 1);
  const shared = got.filter((value) => (unmatched.get(value) ?? 0) > 0 && unmatched.set(value, unmatched.get(value)! - 1)).length;
  const sequence = got.length === want.length && got.every((value, i) => value === want[i]) ? 1 : 0;
  const values = sequence === 1 ? 1 : shared / Math.max(got.length, want.length);
  return { reward: (sequence + values) / 2, parts: { sequence, values }, details: { agent_obs: output, eval_obs: expected } };
}
