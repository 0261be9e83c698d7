/**
 * Fuzz of the Python env's channel from the sandbox to the host (issue 26): every byte
 * stream a sandbox can send — random bytes, well-formed frames cut at random places,
 * adversarial headers (huge, negative, non-numeric lengths), payloads that are not JSON or
 * not objects, invalid UTF-8, deep nesting, frames inside frames — goes through the
 * FrameReader, the FrameChannel's stream handler and the reply checks. None may throw; each
 * ends in frames or one typed, truncated outcome (`malformed` / SandboxError); memory held
 * stays within one frame.
 */
import { describe, expect, it } from 'vitest';
import { FrameChannel } from '../../envs/python/frame-channel.js';
import { FrameReader, type FrameObject } from '../../envs/python/frame-reader.js';
import { execReply } from '../../envs/python/python-session.js';
import { isAppsOutcome, isMbppOutcome, outcomes } from '../../envs/python/python-scorer.js';
import { seededRandom } from '../../src/env/episode.js';
import { SandboxError } from '../../src/errors.js';
import type { AttachedProcess, Sandbox } from '../../src/sandbox/types.js';

const NONCE = '0123456789abcdef';
const PREFIX = Buffer.from(`\x1eIC${NONCE} `);
const MAX = 4096;

const frame = (payload: Buffer | string, length?: number | string) => {
  const body = Buffer.isBuffer(payload) ? payload : Buffer.from(payload);
  return Buffer.concat([PREFIX, Buffer.from(`${length ?? body.length}\n`), body]);
};

/** A stream a hostile sandbox might send, from a seeded generator. */
function hostileStream(random: () => number): Buffer {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(random() * 256)));
  const goodObject = () => JSON.stringify({ id: Math.floor(random() * 5), executed: random() < 0.5, output: 'x'.repeat(Math.floor(random() * 50)), outputBytes: 3, strays: 0, timedOut: false, outputLimit: false, restarted: null });
  const parts: Buffer[] = [];
  const count = 1 + Math.floor(random() * 6);
  for (let i = 0; i < count; i++) {
    parts.push(
      pick([
        () => bytes(Math.floor(random() * 300)),
        () => frame(goodObject()),
        () => frame('abcde', 5),
        () => frame('{}', pick(['99999999999999999999999', '-1', '1e3', ' 2', '0x10', '', '2 ', '٣', String(MAX + 1), String(2 ** 53 + 1)])),
        () => frame(pick(['[]', 'null', '7', '"s"', 'true', '{', '{"a":', '[' .repeat(10_000) + ']'.repeat(10_000), '{"id":1}{"id":2}'])),
        () => frame(bytes(Math.floor(random() * 40))),
        () => frame(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])),
        () => frame(goodObject()).subarray(0, Math.floor(random() * 40)),
        () => Buffer.concat([PREFIX, Buffer.from('1'.repeat(Math.floor(random() * 40)))]),
        () => Buffer.concat([PREFIX, PREFIX, frame('{}')]),
        () => frame(JSON.stringify({ id: 1, output: PREFIX.toString('latin1') + '5\nabcde' })),
        () => Buffer.from(PREFIX.subarray(0, Math.floor(random() * PREFIX.length))),
        () => frame(JSON.stringify({ id: 1, driverError: 'x'.repeat(100) })),
        () => frame(JSON.stringify({ ready: true })),
      ])(),
    );
  }
  return Buffer.concat(parts);
}

/** Cuts `stream` into chunks at random places (single bytes included). */
function chunks(stream: Buffer, random: () => number): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < stream.length; ) {
    const size = random() < 0.3 ? 1 : 1 + Math.floor(random() * 64);
    out.push(stream.subarray(at, at + size));
    at += size;
  }
  return out;
}

class ScriptedProcess implements AttachedProcess {
  handlers: { output(chunk: Buffer): void; exit(): void } | undefined;
  closed = false;
  write(): void {}
  listen(handlers: { output(chunk: Buffer): void; exit(): void }): void {
    this.handlers = handlers;
  }
  close(): void {
    this.closed = true;
  }
}

const SANDBOX = { id: 'fuzz', attach: async () => new ScriptedProcess() } as unknown as Sandbox;

describe('the Python channel under fuzzing', () => {
  it('FrameReader: 20,000 hostile streams in random chunks never throw; each gives frames or one malformed event; memory stays within a frame', () => {
    const random = seededRandom(26);
    let frames = 0;
    let malformed = 0;
    const faults: string[] = [];
    for (let i = 0; i < 20_000; i++) {
      const stream = hostileStream(random);
      const reader = new FrameReader(PREFIX, MAX);
      let broken = 0;
      for (const chunk of chunks(stream, random)) {
        for (const event of reader.push(chunk)) {
          if (event.kind === 'malformed') broken++;
          else {
            frames++;
            if (typeof event.frame !== 'object' || Array.isArray(event.frame) || event.frame === null) faults.push(`stream ${i}: a frame that is not an object`);
          }
        }
        const held = (reader as unknown as { buffer: Buffer }).buffer.length;
        if (held > PREFIX.length + 21 + MAX + 64) faults.push(`stream ${i}: ${held} bytes held`);
        if (reader.noise.length > 4096) faults.push(`stream ${i}: noise of ${reader.noise.length}`);
      }
      if (broken > 1 || (broken === 1 && typeof reader.malformed !== 'string')) faults.push(`stream ${i}: ${broken} malformed events`);
      malformed += broken;
    }
    expect(faults).toEqual([]);
    // Both outcomes were exercised.
    expect(frames).toBeGreaterThan(10_000);
    expect(malformed).toBeGreaterThan(5_000);
  });

  it('FrameReader: well-formed frames cut anywhere come out whole and in order', () => {
    const random = seededRandom(7);
    for (let i = 0; i < 2_000; i++) {
      const sent = Array.from({ length: 1 + Math.floor(random() * 5) }, (_, k) => ({ id: k, text: '\x1eIC é ' + 'z'.repeat(Math.floor(random() * 100)) }));
      const noise = Buffer.from('noise\n');
      const stream = Buffer.concat(sent.flatMap((f) => [noise, frame(JSON.stringify(f))]));
      const reader = new FrameReader(PREFIX, MAX);
      const got: FrameObject[] = [];
      for (const chunk of chunks(stream, random)) for (const e of reader.push(chunk)) if (e.kind === 'frame') got.push(e.frame);
      expect(got).toEqual(sent);
      expect(reader.malformed).toBeUndefined();
    }
  });

  it('FrameChannel: 5,000 hostile streams fed to its stream handler never throw; a waiting request ends in a SandboxError or a reply', async () => {
    const random = seededRandom(2026);
    let errors = 0;
    for (let i = 0; i < 5_000; i++) {
      const process = new ScriptedProcess();
      const sandbox = { ...SANDBOX, attach: async () => process } as unknown as Sandbox;
      const { channel } = await FrameChannel.start(sandbox, 'fuzzed program', { name: 'fuzz', source: Buffer.from('') }, MAX);
      // The stream must use this channel's nonce: put it where the generator put ours.
      const nonce = (channel as unknown as { reader: { prefix: Buffer } }).reader.prefix;
      const stream = Buffer.from(hostileStream(random).toString('latin1').split(PREFIX.toString('latin1')).join(nonce.toString('latin1')), 'latin1');
      const reply = channel.request({ op: 'exec' }, 50).then(
        (f) => f,
        (e: unknown) => e,
      );
      // A throw here fails the test: the handler runs inside the loop.
      for (const chunk of chunks(stream, random)) process.handlers!.output(chunk);
      process.handlers!.exit();
      const outcome = await reply;
      if (outcome instanceof Error) {
        if (!(outcome instanceof SandboxError)) throw outcome;
        errors++;
      } else if ((outcome as FrameObject).id !== 1) {
        throw new Error(`a reply to another request: ${JSON.stringify(outcome)}`);
      }
      channel.close();
    }
    expect(errors).toBeGreaterThan(1_000);
  }, 120_000);

  it('reply checks: 50,000 random objects never throw and never pass with a field of the wrong type; output is cut to its limit in bytes', () => {
    const random = seededRandom(11);
    const values = [undefined, null, true, false, 0, -1, 1.5, 2 ** 60, NaN, '', 'é'.repeat(100), [], {}, [1], { a: 1 }];
    const pick = () => values[Math.floor(random() * values.length)];
    const keys = ['executed', 'output', 'outputBytes', 'strays', 'timedOut', 'outputLimit', 'restarted', 'passed', 'error', 'detail'];
    let accepted = 0;
    for (let i = 0; i < 50_000; i++) {
      const object: FrameObject = {};
      for (const key of keys) if (random() < 0.8) object[key] = random() < 0.5 ? pick() : { executed: true, output: 'é'.repeat(100), outputBytes: 3, strays: 0, timedOut: false, outputLimit: false, restarted: null, passed: true, error: '' }[key];
      const reply = execReply(object, 64);
      if (reply) {
        accepted++;
        expect(typeof reply.output).toBe('string');
        expect(Buffer.byteLength(reply.output)).toBeLessThanOrEqual(64 + 3);
        expect(Number.isSafeInteger(reply.outputBytes)).toBe(true);
      }
      const list = { pred: [object, object] };
      const mbpp = outcomes(list, 'pred', 2, isMbppOutcome);
      if (mbpp) for (const o of mbpp) for (const v of Object.values(o)) expect(typeof v).toBe('string');
      const apps = outcomes(list, 'pred', 2, isAppsOutcome);
      if (apps) for (const o of apps) expect(typeof o.passed).toBe('boolean');
      expect(outcomes(list, 'pred', 3, isMbppOutcome)).toBeUndefined();
    }
    expect(accepted).toBeGreaterThan(100);
  });
});
