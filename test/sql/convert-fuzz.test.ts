/**
 * Fuzz of the SQL side's one parser of bytes that come from the server (issue 26 item 2):
 * the cell converters (mariadb/convert.ts → python-repr.ts) that turn what mysql2 gives for
 * each column type into Python reprs. An agent chooses what its cells hold; whatever the
 * server sends, a converter returns a string (never throws), bounded by the input's size.
 * (The embedded backend's worker messages are structured clones of our own worker's objects,
 * not bytes; mysql2's packet parser is the library's.)
 */
import type { FieldPacket } from 'mysql2';
import { describe, expect, it } from 'vitest';
import { converterFor } from '../../envs/sql/mariadb/convert.js';
import { seededRandom } from '../../src/env/episode.js';

/** MySQL column types, as convert.ts tells them apart (and some it does not know). */
const TYPES = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 245, 246, 247, 248, 249, 250, 251, 252, 253, 254, 255];
const CHARSETS = [63, 33, 45, 224, 8];

const INPUTS = 20_000;

function randomText(random: () => number, length: number): string {
  const pick = random();
  let out = '';
  for (let i = 0; i < length; i++) {
    if (pick < 0.3) out += '0123456789-:. '[Math.floor(random() * 14)];
    else if (pick < 0.6) out += String.fromCharCode(Math.floor(random() * 128));
    else out += String.fromCharCode(Math.floor(random() * 0x10000)); // lone surrogates included
  }
  return out;
}

/** Values shaped like the server's for each type, cut, stretched or corrupted. */
function adversarial(random: () => number): unknown {
  const shapes: (() => unknown)[] = [
    () => randomText(random, Math.floor(random() * 64)),
    () => Buffer.from(Array.from({ length: Math.floor(random() * 64) }, () => Math.floor(random() * 256))),
    () => `${Math.floor(random() * 1e4)}-${Math.floor(random() * 100)}-${Math.floor(random() * 100)}`,
    () => `2020-01-01 ${randomText(random, 12)}`,
    () => `${random() < 0.5 ? '-' : ''}${'9'.repeat(Math.floor(random() * 40))}:59:59.${'9'.repeat(Math.floor(random() * 9))}`,
    () => '9'.repeat(Math.floor(random() * 5000)),
    () => (random() < 0.5 ? Number.NaN : random() < 0.5 ? Infinity : -0),
    () => random() * 1e308,
    () => ({ toString: () => 'object' }),
    () => 12345678901234567890n,
    () => '',
    () => null,
  ];
  return shapes[Math.floor(random() * shapes.length)]!();
}

function sizeOf(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (Buffer.isBuffer(value)) return value.length;
  return 32;
}

describe('SQL cell converters under fuzzed server values', () => {
  it(`${INPUTS} random and adversarial values over every column type: a string every time, never longer than 12 characters per input unit (\\xNN per UTF-8 byte)`, () => {
    const random = seededRandom(26);
    let converted = 0;
    for (let i = 0; i < INPUTS; i++) {
      const type = TYPES[Math.floor(random() * TYPES.length)]!;
      const field = { columnType: type, type, characterSet: CHARSETS[Math.floor(random() * CHARSETS.length)]! } as unknown as FieldPacket;
      const value = adversarial(random);
      let repr: unknown;
      try {
        repr = converterFor(field)(value);
      } catch (error) {
        throw new Error(`type ${type}, value ${JSON.stringify(String(value).slice(0, 80))}: threw ${String(error)}`);
      }
      if (typeof repr !== 'string' || repr.length > 12 * sizeOf(value) + 64) {
        throw new Error(`type ${type}, value ${JSON.stringify(String(value).slice(0, 80))}: gave ${JSON.stringify(String(repr).slice(0, 200))}`);
      }
      converted++;
    }
    expect(converted).toBe(INPUTS);
  });
});
