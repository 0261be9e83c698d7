import { describe, expect, it } from 'vitest';
import { capReply, type ObservationReply } from '../../src/server/protocol.js';

const reply = (output: string): ObservationReply => ({ observation: { output, exit_code: 0, task: { task_id: 0, query: 'q' }, info: { events: [] } }, reward: 0.5, done: true });
const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

describe('capReply (the cap on every reply serve sends)', () => {
  it('keeps a reply under the cap as it is', () => {
    const small = reply('hello');
    expect(capReply(small, 4096)).toBe(small);
  });

  it.each([
    ['ASCII', 'x'],
    ['control characters (6 bytes of JSON each)', '\u0001'],
    ['quotes and backslashes (2 bytes each)', '"\\'],
    ['3-byte characters', '€'],
    ['surrogate pairs (4 bytes)', '😀'],
  ])('cuts %s to fit, never splitting a surrogate pair, keeping reward and done', (_name, unit) => {
    for (const limit of [1024, 4096, 10_000]) {
      const original = unit.repeat(20_000);
      const capped = capReply(reply(original), limit);
      expect(bytes(capped)).toBeLessThanOrEqual(limit);
      // The longest prefix that fits (give or take half a surrogate pair): two units more would not.
      const longer = { ...capped, observation: { ...capped.observation, output: capped.observation.output + unit.repeat(2) } };
      expect(bytes(longer)).toBeGreaterThan(limit);
      expect(original.startsWith(capped.observation.output)).toBe(true);
      expect(capped.observation.output).not.toMatch(/[\uD800-\uDBFF]$/);
      expect(capped).toMatchObject({ reward: 0.5, done: true, observation: { exit_code: 0, info: { events: [], output_truncated: { original_bytes: Buffer.byteLength(original), limit_bytes: limit } } } });
    }
  });
});
