/**
 * Fuzzing of every parser of bytes that come from inside a sandbox on the shell side: the
 * shell session's marker protocol (on a control channel of its own, as over FIFOs, and
 * in-band, as over Docker's attach stream and Kubernetes' exec stream), Docker's multiplexed
 * stream framing, the markers' fields, Kubernetes' exec status, and the FIFO process's
 * plumbing with real FIFOs. Inputs are random and adversarial (forged, split, truncated and
 * mutated markers, huge lengths and counts, floods past the caps, a shell that exits or never
 * answers), from a seeded generator: a failure names its seed and input. Whatever comes,
 * a command ends with a result — output within its cap, a typed event for what went wrong —
 * or a typed SandboxError; nothing throws anything else, and the session stays usable.
 */
import { execFileSync } from 'node:child_process';
import { openSync, writeSync, closeSync, constants } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SandboxError } from '../../src/errors.js';
import { MultiplexedStreamParser } from '../../src/sandbox/docker/demux.js';
import { FifoProcess } from '../../src/sandbox/docker/fifo-channel.js';
import { parseExecStatus } from '../../src/sandbox/kubernetes/exec-stream.js';
import { ShellSession } from '../../src/sandbox/shell/shell-session.js';
import { isWellFormed, parseMarker } from '../../src/sandbox/shell/shell-script.js';
import type { AttachedProcess, Sandbox } from '../../src/sandbox/types.js';

/** A small seeded generator (mulberry32): the same seed, the same inputs. */
function generator(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => int(256)));
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
  /** `data` cut into 1..8 pieces at random places. */
  const split = (data: Buffer): Buffer[] => {
    const cuts = Array.from({ length: int(8) }, () => int(data.length + 1)).sort((x, y) => x - y);
    const pieces: Buffer[] = [];
    let from = 0;
    for (const cut of [...cuts, data.length]) {
      pieces.push(data.subarray(from, cut));
      from = cut;
    }
    return pieces.filter((p) => p.length > 0);
  };
  return { next, int, bytes, pick, split };
}

type Chunk = { to: 'output' | 'control'; bytes: Buffer } | { exit: true };

/** What the fake shell knows when it answers a command. */
interface Answering {
  seq: number;
  token: string;
  nonce: string;
  pid: number;
  /** A marker as the real shell writes it, with these fields (defaults: the right ones). */
  marker(fields?: Partial<{ id: string; status: string; pid: string; counters: string; cwd: string; nonce: string }>): Buffer;
}

/**
 * A sandbox whose shells are scripted: each answers its start-up as the real one does, then
 * each command with what `answer` returns (chunks on its output or control channel, an exit).
 */
function scriptedSandbox(inBand: boolean, answer: (a: Answering) => Chunk[]): Sandbox & { shells: number } {
  let pids = 100;
  const sandbox = {
    id: `fuzz-${inBand ? 'in-band' : 'fifo'}`,
    shells: 0,
    spec: {},
    async exec() {
      return { exitCode: 0, output: Buffer.alloc(0), timedOut: false, durationMs: 0 };
    },
    async restartProcesses() {},
    async attach(): Promise<AttachedProcess> {
      sandbox.shells++;
      const pid = ++pids;
      let handlers: { output(chunk: Buffer): void; control?(chunk: Buffer): void; exit(): void } | undefined;
      let nonce = '';
      let closed = false;
      const emit = (chunks: Chunk[]) =>
        setImmediate(() => {
          for (const chunk of chunks) {
            if (closed || !handlers) return;
            if ('exit' in chunk) {
              closed = true;
              handlers.exit();
              return;
            }
            if (chunk.to === 'control' && !inBand) handlers.control!(chunk.bytes);
            else handlers.output(chunk.bytes);
          }
        });
      const markerOf = (seq: string) =>
        (fields: Parameters<Answering['marker']>[0] = {}) =>
          Buffer.from(`\x1e${fields.nonce ?? nonce} ${fields.id ?? seq} ${fields.status ?? '0'} ${fields.pid ?? pid} ${fields.counters ?? '-1 -1 -1'} ${fields.cwd ?? '/'}\x1f${fields.nonce ?? nonce}\n`);
      return {
        hasControlChannel: !inBand,
        write(data: string) {
          if (closed) return;
          if (!nonce) {
            nonce = data.trim();
            emit([{ to: 'control', bytes: markerOf('0')() }]);
            return;
          }
          const header = /^(\d+):([0-9a-f]*) \d+\n/.exec(data);
          if (!header) return;
          const seq = Number(header[1]);
          const token = header[2]!;
          emit(answer({ seq, token, nonce, pid, marker: markerOf(`${seq}:${token}`) }));
        },
        listen(h) {
          handlers = h;
        },
        close() {
          closed = true;
        },
      };
    },
  };
  return sandbox as unknown as Sandbox & { shells: number };
}

const OPTIONS = { timeoutMs: 15, graceMs: 2, startupTimeoutMs: 500, maxOutputBytes: 4096, killOutputBytes: 65_536, env: {} };

/** One adversarial answer to a command, drawn at random. */
function adversary(random: ReturnType<typeof generator>): (a: Answering) => Chunk[] {
  const out = (bytes: Buffer): Chunk[] => random.split(bytes).map((b) => ({ to: 'output' as const, bytes: b }));
  const ctl = (bytes: Buffer): Chunk[] => random.split(bytes).map((b) => ({ to: 'control' as const, bytes: b }));
  const mutate = (bytes: Buffer) => {
    const copy = Buffer.from(bytes);
    for (let i = random.int(4); i >= 0; i--) copy[random.int(copy.length)] = random.int(256);
    return random.next() < 0.5 ? copy : copy.subarray(0, random.int(copy.length));
  };
  const field = () => random.pick(['', '-1', '0', '1', 'NaN', 'x', '1e400', '-9999999999999999999', String(2 ** 53 + 1), ' ', '\x1f', '9'.repeat(400)]);
  const cases: ((a: Answering) => Chunk[])[] = [
    // Random bytes, then the right marker.
    (a) => [...out(random.bytes(random.int(3000))), ...ctl(a.marker())],
    // A flood past the kill limit, with or without a marker after it.
    (a) => [...out(random.bytes(70_000)), ...(random.next() < 0.5 ? ctl(a.marker()) : [])],
    // Random bytes on the control channel (in-band: in the output), then the marker.
    (a) => [...ctl(random.bytes(1 + random.int(200))), ...ctl(a.marker())],
    // The marker with wrong fields: id, status, pid, counters, a huge cwd, another nonce.
    (a) => ctl(a.marker({ id: random.pick([`${a.seq}:${a.token}x`, `${a.seq + 1}:${a.token}`, `${a.seq - 1}:${a.token}`, `:${a.token}`, 'x:y', `${a.seq}`, '']), status: field() })),
    (a) => ctl(a.marker({ status: field(), pid: random.pick([String(a.pid), field()]), counters: `${field()} ${field()} ${field()}`, cwd: random.pick(['/', 'x'.repeat(9000), random.bytes(50).toString('latin1')]) })),
    (a) => [...ctl(a.marker({ nonce: random.bytes(16).toString('hex') })), ...ctl(a.marker())],
    // A mutated or truncated marker, then (sometimes) the right one.
    (a) => [...ctl(mutate(a.marker())), ...(random.next() < 0.7 ? ctl(a.marker()) : [])],
    // Two markers; a marker start with no end and endless bytes after it.
    (a) => [...ctl(a.marker()), ...ctl(a.marker())],
    (a) => ctl(Buffer.concat([Buffer.from(`\x1e${a.nonce} `), random.bytes(random.pick([10, 9000, 20_000]))])),
    // Output, then the shell exits (with or without a marker before it); or says nothing at all.
    (a) => [...out(random.bytes(random.int(500))), ...(random.next() < 0.3 ? ctl(a.marker()) : []), { exit: true }],
    () => [],
    // Markers and their pieces amid random output, in-band style.
    (a) => out(Buffer.concat([random.bytes(random.int(100)), Buffer.from(`\x1e${a.nonce}`), random.bytes(random.int(100)), a.marker(), random.bytes(random.int(100))])),
  ];
  return random.pick(cases);
}

describe('fuzzing the shell session protocol', () => {
  it.each([
    ['a control channel of its own (FIFO transport)', false, 1],
    ['markers in-band (attach and exec streams)', true, 2],
  ])('over %s: every command ends with a result within its caps, or a typed error; the session stays usable', async (_what, inBand, seed) => {
    const random = generator(seed);
    let answer: (a: Answering) => Chunk[] = (a) => [{ to: 'control', bytes: a.marker() }];
    const sandbox = scriptedSandbox(inBand, (a) => answer(a));
    const session = await ShellSession.open(sandbox, OPTIONS);
    const inputs = 500;
    const kinds = new Map<string, number>();
    for (let i = 0; i < inputs; i++) {
      answer = adversary(random);
      const result = await session.run(`command ${i}`).catch((error: unknown) => error as Error);
      if (!(result instanceof Error)) {
        expect(result.output.length, `input ${i} (seed ${seed})`).toBeLessThanOrEqual(OPTIONS.maxOutputBytes);
        expect(result.exitCode === null || (Number.isInteger(result.exitCode) && result.exitCode >= 0 && result.exitCode <= 255), `input ${i} (seed ${seed}): exit code ${result.exitCode}`).toBe(true);
        for (const event of result.events) kinds.set(event.kind, (kinds.get(event.kind) ?? 0) + 1);
      } else {
        expect(result, `input ${i} (seed ${seed})`).toBeInstanceOf(SandboxError);
        kinds.set('SandboxError', (kinds.get('SandboxError') ?? 0) + 1);
      }
    }
    // An honest shell is believed again afterwards.
    answer = (a) => [{ to: 'output', bytes: Buffer.from('fine\n') }, { to: 'control', bytes: a.marker({ status: '3' }) }];
    const last = await session.run('last');
    expect(last).toMatchObject({ output: 'fine\n', exitCode: 3, timedOut: false });
    session.close();
    console.info(`shell protocol fuzz (${inBand ? 'in-band' : 'control channel'}): ${inputs} inputs, none crashed; ${sandbox.shells} shells started; outcomes ${JSON.stringify(Object.fromEntries(kinds))}`);
    expect(kinds.get('protocol-violation')).toBeGreaterThan(0);
    expect(kinds.get('output-limit')).toBeGreaterThan(0);
    expect(kinds.get('timed-out')).toBeGreaterThan(0);
  }, 120_000);

  it('parseMarker takes any text: numbers or NaN, never a throw, and isWellFormed judges it', () => {
    const random = generator(3);
    const inputs = 5000;
    const wrong: string[] = [];
    for (let i = 0; i < inputs; i++) {
      const text = random.next() < 0.5 ? random.bytes(random.int(200)).toString('utf8') : Array.from({ length: random.int(12) }, () => random.pick(['1:ab', '7', '-1', 'NaN', '', ' ', '/x y', '1e999', random.bytes(5).toString('latin1')])).join(' ');
      const marker = parseMarker(text);
      const fields = [marker.seq, marker.status, marker.shellPid, marker.pids, marker.pidsMax, marker.oomKills];
      if (fields.some((n) => typeof n !== 'number') || typeof marker.cwd !== 'string' || typeof isWellFormed(marker) !== 'boolean') wrong.push(text);
    }
    expect(wrong).toEqual([]);
  });
});

describe("fuzzing Docker's multiplexed stream parser", () => {
  const frame = (type: number, payload: Buffer) => {
    const header = Buffer.alloc(8);
    header[0] = type;
    header.writeUInt32BE(payload.length, 4);
    return Buffer.concat([header, payload]);
  };

  it('valid streams split anywhere give their payloads in order; random bytes and huge lengths never throw and hold no more than came', () => {
    const random = generator(4);
    const inputs = 2000;
    for (let i = 0; i < inputs; i++) {
      const payloads = Array.from({ length: random.int(6) }, () => random.bytes(random.int(300)));
      const stream = Buffer.concat(payloads.map((p) => frame(random.pick([1, 2]), p)));
      const got: Buffer[] = [];
      const parser = new MultiplexedStreamParser((payload) => got.push(Buffer.from(payload)));
      for (const piece of random.split(stream)) parser.push(piece);
      expect(Buffer.concat(got).equals(Buffer.concat(payloads)), `input ${i}`).toBe(true);

      const hostile = new MultiplexedStreamParser(() => undefined);
      const garbage = random.next() < 0.5 ? random.bytes(random.int(2000)) : Buffer.concat([frame(random.int(256), random.bytes(random.int(50))).subarray(0, 4), Buffer.from([0xff, 0xff, 0xff, 0xff]), random.bytes(random.int(5000))]);
      for (const piece of random.split(garbage)) hostile.push(piece);
      // What it keeps waiting for a frame's end is what came, never the length a header claims.
      expect((hostile as unknown as { pending: Buffer }).pending.length).toBeLessThanOrEqual(garbage.length);
    }
    console.info(`demux fuzz: ${inputs * 2} streams, none crashed`);
  });
});

describe("fuzzing Kubernetes' exec status", () => {
  it('any text on the status channel is an exit code or a message, never a throw', () => {
    const random = generator(5);
    const samples = [
      '{"status":"Success"}',
      '{"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"2"}]}}',
      '{"status":"Failure","reason":"NonZeroExitCode","details":{"causes":null}}',
      '{"details":{"causes":[null]}}',
      '{"details":{"causes":"x"}}',
      'null',
      '[]',
      '"x"',
      '{"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"99999999999999999999999"}]}}',
    ];
    const inputs = 5000;
    let threw = 0;
    for (let i = 0; i < inputs; i++) {
      const base = random.pick(samples);
      const text = random.next() < 0.3 ? random.bytes(random.int(100)).toString('utf8') : random.next() < 0.5 ? base.slice(0, random.int(base.length + 1)) : base;
      try {
        const status = parseExecStatus(text);
        if (!(status.exitCode === null || Number.isInteger(status.exitCode))) threw++;
      } catch {
        threw++;
      }
    }
    expect(threw).toBe(0);
  });
});

describe('fuzzing the FIFO process', () => {
  it('whatever is written on its output and control FIFOs reaches the handlers byte for byte; closing them ends it once', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fifo-fuzz-'));
    const random = generator(6);
    try {
      for (let round = 0; round < 20; round++) {
        const pipes = { in: join(dir, `${round}.in`), out: join(dir, `${round}.out`), ctl: join(dir, `${round}.ctl`) };
        execFileSync('mkfifo', [pipes.in, pipes.out, pipes.ctl]);
        const process = FifoProcess.open(pipes);
        const got = { output: [] as Buffer[], control: [] as Buffer[], exits: 0 };
        const ended = new Promise<void>((resolve) =>
          process.listen({
            output: (chunk) => got.output.push(Buffer.from(chunk)),
            control: (chunk) => got.control.push(Buffer.from(chunk)),
            exit: () => {
              got.exits++;
              resolve();
            },
          }),
        );
        const out = openSync(pipes.out, constants.O_WRONLY | constants.O_NONBLOCK);
        const ctl = openSync(pipes.ctl, constants.O_WRONLY | constants.O_NONBLOCK);
        const sent = { output: random.bytes(random.pick([0, 1, 4096, 65_537, 300_000])), control: random.bytes(random.pick([0, 1, 8193])) };
        // Written in pieces, as a process would, without blocking this test on a full pipe.
        const writeAll = async (fd: number, data: Buffer) => {
          for (let at = 0; at < data.length; ) {
            try {
              at += writeSync(fd, data, at, Math.min(data.length - at, 1 + random.int(70_000)));
            } catch (error) {
              if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
              await new Promise((resolve) => setImmediate(resolve));
            }
          }
        };
        await Promise.all([writeAll(out, sent.output), writeAll(ctl, sent.control)]);
        closeSync(ctl);
        closeSync(out);
        await ended;
        await new Promise((resolve) => setTimeout(resolve, 20));
        expect(Buffer.concat(got.control).equals(sent.control)).toBe(true);
        expect(got.exits).toBe(1);
        process.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
