import { randomBytes } from 'node:crypto';
import { SandboxError } from '../../src/errors.js';
import type { AttachedProcess, Sandbox } from '../../src/sandbox/types.js';
import { FrameReader, type FrameObject } from './frame-reader.js';

/**
 * Starts a Python program the host sends over stdin (never a file in the sandbox, which an
 * agent could have replaced): `python3 -I -B -u -c BOOT ARGS...` reads `<length>\n<source>`
 * unbuffered from fd 0 and runs it as `__main__`; the rest of stdin is the program's.
 */
const BOOT = [
  'import os, sys',
  'h = b""',
  'while not h.endswith(b"\\n"):',
  '    c = os.read(0, 1)',
  '    if not c: sys.exit(1)',
  '    h += c',
  'n, src = int(h), b""',
  'while len(src) < n:',
  '    c = os.read(0, n - len(src))',
  '    if not c: sys.exit(1)',
  '    src += c',
  'g = {"__name__": "__main__", "__file__": sys.argv[1], "__builtins__": __builtins__}',
  'del h, n, c, os, sys',
  'exec(compile(src, g["__file__"], "exec"), g)',
].join('\n');

/**
 * A request/reply channel to a Python program in a sandbox over its attached stdio: requests
 * `<length>\n<JSON>` on stdin, replies as frames read by a {@link FrameReader}. A reply
 * carries the request's `id`; a `{"ready": true}` frame says the program is up. Anything the
 * sandbox sends that is not a frame of the right shape ends the channel with a
 * {@link SandboxError} to every waiting request, never an exception on the stream's handler.
 */
export class FrameChannel {
  private readonly reader: FrameReader;
  private readonly waiting = new Map<number, (frame: FrameObject | Error) => void>();
  private ready: ((frame: FrameObject | Error) => void) | undefined;
  private readonly readyFrame: Promise<FrameObject | Error>;
  private seq = 0;
  private ended: string | undefined;

  private constructor(
    private readonly process: AttachedProcess,
    private readonly sandbox: Sandbox,
    private readonly what: string,
    prefix: Buffer,
    maxFrameBytes: number,
  ) {
    this.reader = new FrameReader(prefix, maxFrameBytes);
    this.readyFrame = new Promise((resolve) => (this.ready = resolve));
    process.listen({ output: (chunk) => this.onOutput(chunk), exit: () => this.end('exited') });
  }

  /**
   * Starts `source` (the program's text, named `name`) in `sandbox` with `args` after it in
   * argv and `env`; frames it sends start with `\x1eIC<nonce> ` (the nonce: a fresh one, given
   * to `nonceArgs` to place in argv, or sent by the caller's first request).
   * @throws SandboxError when the process cannot be started.
   */
  static async start(
    sandbox: Sandbox,
    what: string,
    program: { name: string; source: Buffer; args?: (nonce: string) => string[]; env?: Record<string, string> },
    maxFrameBytes: number,
  ): Promise<{ channel: FrameChannel; nonce: string }> {
    const nonce = randomBytes(8).toString('hex');
    const process = await sandbox.attach(['python3', '-I', '-B', '-u', '-c', BOOT, program.name, ...(program.args?.(nonce) ?? [])], {
      workdir: '/',
      ...(program.env ? { env: program.env } : {}),
    });
    const channel = new FrameChannel(process, sandbox, what, Buffer.from(`\x1eIC${nonce} `), maxFrameBytes);
    process.write(`${program.source.length}\n`);
    process.write(program.source.toString('utf8'));
    return { channel, nonce };
  }

  /** Whether the channel still works (the process has not exited, nor sent anything malformed). */
  get open(): boolean {
    return this.ended === undefined;
  }

  /** The last few KiB the process wrote outside frames (its own crash report). */
  get noise(): string {
    return this.reader.noise;
  }

  /** Waits for the program's `ready` frame. @throws SandboxError when it does not come within `timeoutMs`. */
  async awaitReady(timeoutMs: number): Promise<FrameObject> {
    const frame = await this.race(this.readyFrame, timeoutMs, `did not start within ${timeoutMs} ms`);
    return frame;
  }

  /** Sends a request without an id and waits for nothing (the program's first, set-up request). */
  send(body: Record<string, unknown>): void {
    if (this.ended !== undefined) return;
    const payload = Buffer.from(JSON.stringify(body));
    this.process.write(`${payload.length}\n${payload.toString('utf8')}`);
  }

  /**
   * Sends `body` with a new id and waits for the reply with that id, at most `backstopMs`.
   * @throws SandboxError (SANDBOX_LOST) when the channel ended, the reply is late, or the
   *   program reported its own failure (`driverError`).
   */
  async request(body: Record<string, unknown>, backstopMs: number): Promise<FrameObject> {
    this.assertOpen();
    const id = ++this.seq;
    const reply = new Promise<FrameObject | Error>((resolve) => this.waiting.set(id, resolve));
    this.send({ ...body, id });
    try {
      const frame = await this.race(reply, backstopMs, `did not answer within ${backstopMs} ms`);
      if (typeof frame.driverError === 'string') throw this.lost(`failed: ${frame.driverError.slice(0, 4000)}`);
      return frame;
    } finally {
      this.waiting.delete(id);
    }
  }

  close(): void {
    this.end('was closed');
  }

  private async race(promise: Promise<FrameObject | Error>, ms: number, late: string): Promise<FrameObject> {
    let timer: NodeJS.Timeout | undefined;
    const result = await Promise.race([promise, new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ms)))]);
    clearTimeout(timer);
    if (result === 'late') {
      const error = this.lost(late);
      this.end(late);
      throw error;
    }
    if (result instanceof Error) throw result;
    return result;
  }

  private assertOpen(): void {
    if (this.ended !== undefined) throw this.lost(this.ended);
  }

  private lost(why: string): SandboxError {
    return new SandboxError('SANDBOX_LOST', `The ${this.what} ${why}`, { details: { sandbox: this.sandbox.id, noise: this.reader.noise.slice(-2000) } });
  }

  /** Ends the channel: the process is closed, every waiting request fails with why. */
  private end(why: string): void {
    if (this.ended !== undefined) return;
    this.ended = why;
    this.process.close();
    const error = this.lost(why);
    for (const resolve of this.waiting.values()) resolve(error);
    this.waiting.clear();
    this.ready?.(error);
    this.ready = undefined;
  }

  private onOutput(chunk: Buffer): void {
    for (const event of this.reader.push(chunk)) {
      if (event.kind === 'malformed') return this.end(`sent ${event.reason}`);
      const frame = event.frame;
      if (frame.ready === true && this.ready) {
        this.ready(frame);
        this.ready = undefined;
      } else if (typeof frame.id === 'number') {
        this.waiting.get(frame.id)?.(frame);
      }
    }
  }
}
