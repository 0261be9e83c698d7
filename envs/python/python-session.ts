import { randomBytes } from 'node:crypto';
import { ConfigError, SandboxError } from '../../src/errors.js';
import type { CommandEvent, CommandResult, CommandRunner, RunOptions } from '../../src/sandbox/shell/types.js';
import type { AttachedProcess, Sandbox } from '../../src/sandbox/types.js';
import { DRIVER_PATH } from './images.js';

export interface PythonSessionOptions {
  /** Per-action time limit (default 10 s); past it the action gets KeyboardInterrupt. */
  timeoutMs: number;
  /** After the interrupt, how long the action may take to stop before the interpreter is replaced (default 1 s). */
  graceMs: number;
  /** Output kept per action (default 64 KiB); the rest is counted, not kept. */
  maxOutputBytes: number;
  /** An action that writes more than this is interrupted (default 16 × maxOutputBytes). */
  killOutputBytes: number;
  /** Address-space limit of the interpreter and of every test process (default 768 MiB). */
  memoryBytes: number;
  /** How long the driver may take to start (default 10 s). */
  startupTimeoutMs: number;
}

export const DEFAULT_PYTHON_SESSION_OPTIONS: Omit<PythonSessionOptions, 'killOutputBytes'> = {
  timeoutMs: 10_000,
  graceMs: 1_000,
  maxOutputBytes: 64 * 1024,
  memoryBytes: 768 * 1024 * 1024,
  startupTimeoutMs: 10_000,
};

function resolveOptions(input: Partial<PythonSessionOptions>): PythonSessionOptions {
  const merged = { ...DEFAULT_PYTHON_SESSION_OPTIONS, ...input };
  const options = { ...merged, killOutputBytes: input.killOutputBytes ?? 16 * merged.maxOutputBytes };
  for (const [key, value] of Object.entries(options)) {
    if (!Number.isFinite(value) || value <= 0) throw new ConfigError(`python.${key}`, 'must be a positive number');
  }
  if (options.killOutputBytes < options.maxOutputBytes) throw new ConfigError('python.killOutputBytes', 'must be at least python.maxOutputBytes');
  return options;
}

/** One MBPP test outcome as InterCode's server reported it (`detail` names the exception; never compared). */
export interface MbppOutcome {
  output?: string;
  error?: string;
  detail?: string;
}

/** One APPS case: the submitted function run with the case's stdin. */
export interface AppsOutcome {
  passed: boolean;
  output: string;
  error: string;
}

export type ScoreRequest =
  | {
      kind: 'mbpp';
      /** The gold's function name the submission is bound to. */
      entry: string;
      submitted: string;
      setup: string;
      gold: string;
      tests: readonly string[];
      testTimeoutMs: number;
      /** `gold-state`: afterwards the interpreter holds the gold's namespace, as InterCode's scoring left it. */
      afterScore: 'keep' | 'gold-state';
    }
  | { kind: 'apps'; submitted: string; cases: readonly { input: string; output: string }[]; testTimeoutMs: number };

export type ScoreReply = { pred: MbppOutcome[]; gold: MbppOutcome[] } | { results: AppsOutcome[] };

interface ExecReply {
  executed: boolean;
  output: string;
  outputBytes: number;
  strays: number;
  timedOut: boolean;
  outputLimit: boolean;
  restarted: string | null;
}

type Frame = { id?: number; ready?: boolean; driverError?: string } & Record<string, unknown>;

/**
 * A Python interpreter in a sandbox, driven over the attached stdio of the in-sandbox
 * driver (envs/python/driver.py): definitions persist between actions, an expression's
 * value is shown as a REPL shows it, an exception comes back as its traceback. Failures
 * of an action (time limit, output flood, os._exit, a crash) are results with notes;
 * only a driver that cannot be reached raises {@link SandboxError}.
 */
export class PythonSession implements CommandRunner {
  readonly cwd = '/';
  private process: AttachedProcess | undefined;
  private prefix: Buffer = Buffer.alloc(0);
  private buffer: Buffer = Buffer.alloc(0);
  private noise = '';
  private seq = 0;
  private waiting = new Map<number, (frame: Frame | null) => void>();
  private ready: ((frame: Frame | null) => void) | undefined;
  private alive = false;
  private readonly options: PythonSessionOptions;

  private constructor(private readonly sandbox: Sandbox, options: Partial<PythonSessionOptions>) {
    this.options = resolveOptions(options);
  }

  /** @throws ConfigError for bad options; SandboxError when the driver does not start. */
  static async open(sandbox: Sandbox, options: Partial<PythonSessionOptions> = {}): Promise<PythonSession> {
    const session = new PythonSession(sandbox, options);
    await session.spawn();
    return session;
  }

  async run(code: string, options: RunOptions = {}): Promise<CommandResult> {
    const started = performance.now();
    const notes: string[] = [];
    if (!this.alive) {
      await this.spawn();
      notes.push('the interpreter had stopped and a new one was started (definitions were lost)');
    }
    const timeoutMs = options.timeoutMs ?? this.options.timeoutMs;
    const reply = (await this.request(
      { op: 'exec', code, timeoutMs, graceMs: this.options.graceMs, keepBytes: this.options.maxOutputBytes, killBytes: this.options.killOutputBytes },
      timeoutMs + this.options.graceMs + 10_000,
    )) as unknown as ExecReply;
    const events: CommandEvent[] = [];
    if (reply.timedOut) events.push({ kind: 'timed-out', afterMs: timeoutMs });
    const shown = Buffer.byteLength(reply.output);
    if (reply.outputBytes > shown) events.push({ kind: 'output-limit', shownBytes: shown, totalBytes: reply.outputBytes, killed: reply.outputLimit });
    if (reply.restarted) notes.push(`the interpreter stopped (${reply.restarted}); a new one was started and definitions were lost`);
    if (reply.strays > 0) notes.push(`${reply.strays} process(es) the action left running were killed`);
    const sep = reply.output === '' || reply.output.endsWith('\n') ? '' : '\n';
    const output = notes.length ? `${reply.output}${sep}${notes.map((n) => `[intercode: ${n}]`).join('\n')}` : reply.output;
    return {
      output,
      exitCode: reply.restarted ? null : reply.executed ? 0 : 1,
      timedOut: reply.timedOut,
      outputBytes: reply.outputBytes,
      durationMs: performance.now() - started,
      cwd: this.cwd,
      events,
    };
  }

  /** Runs a submission's tests (each in its own process in the sandbox). @throws SandboxError */
  async score(request: ScoreRequest): Promise<ScoreReply> {
    if (!this.alive) throw new SandboxError('SANDBOX_LOST', 'The Python interpreter is gone; the submission cannot be scored', { details: { sandbox: this.sandbox.id } });
    const count = request.kind === 'mbpp' ? 2 * request.tests.length : request.cases.length;
    const reply = await this.request({ op: 'score', ...request }, (count + 2) * (request.testTimeoutMs + 3_000) + 10_000);
    return reply as unknown as ScoreReply;
  }

  close(): void {
    this.alive = false;
    this.process?.close();
    this.process = undefined;
    this.settleAll();
  }

  private async request(body: Record<string, unknown>, backstopMs: number): Promise<Frame> {
    const id = ++this.seq;
    const payload = Buffer.from(JSON.stringify({ ...body, id }));
    const reply = new Promise<Frame | null>((resolve) => this.waiting.set(id, resolve));
    this.process!.write(`${payload.length}\n${payload.toString('utf8')}`);
    let timer: NodeJS.Timeout | undefined;
    const frame = await Promise.race([reply, new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), backstopMs)))]);
    clearTimeout(timer);
    this.waiting.delete(id);
    if (frame === 'late' || frame === null || frame.driverError) {
      const why = frame === 'late' ? `did not answer within ${backstopMs} ms` : frame === null ? 'exited' : `failed: ${frame.driverError}`;
      this.close();
      throw new SandboxError('SANDBOX_LOST', `The Python driver ${why}`, { details: { sandbox: this.sandbox.id, noise: this.noise.slice(-2000) } });
    }
    return frame;
  }

  private async spawn(): Promise<void> {
    this.process?.close();
    this.settleAll();
    const nonce = randomBytes(8).toString('hex');
    this.prefix = Buffer.from(`\x1eIC${nonce} `);
    this.buffer = Buffer.alloc(0);
    this.noise = '';
    const ready = new Promise<Frame | null>((resolve) => (this.ready = resolve));
    const process = await this.sandbox.attach(['python3', '-u', DRIVER_PATH, nonce], {
      workdir: '/',
      env: { IC_MEMORY_BYTES: String(this.options.memoryBytes), PYTHONDONTWRITEBYTECODE: '1' },
    });
    this.process = process;
    process.listen({
      output: (chunk) => {
        if (this.process === process) this.onOutput(chunk);
      },
      exit: () => {
        if (this.process !== process) return;
        this.alive = false;
        this.settleAll();
      },
    });
    let timer: NodeJS.Timeout | undefined;
    const frame = await Promise.race([ready, new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), this.options.startupTimeoutMs)))]);
    clearTimeout(timer);
    if (!frame?.ready) {
      process.close();
      throw new SandboxError('SANDBOX_LOST', 'The Python driver could not be started in the sandbox', {
        details: { sandbox: this.sandbox.id, output: this.noise.slice(-2000) },
      });
    }
    this.alive = true;
  }

  private settleAll(): void {
    for (const resolve of this.waiting.values()) resolve(null);
    this.waiting.clear();
    this.ready?.(null);
    this.ready = undefined;
  }

  /** Splits the stream into frames `\x1eIC<nonce> <length>\n<JSON>`; anything else is noise. */
  private onOutput(chunk: Buffer): void {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    for (;;) {
      const start = this.buffer.indexOf(this.prefix);
      if (start < 0) {
        const keep = Math.max(0, this.buffer.length - this.prefix.length + 1);
        this.addNoise(this.buffer.subarray(0, keep));
        this.buffer = this.buffer.subarray(keep);
        return;
      }
      if (start > 0) this.addNoise(this.buffer.subarray(0, start));
      const newline = this.buffer.indexOf(0x0a, start + this.prefix.length);
      if (newline < 0) return void (this.buffer = this.buffer.subarray(start));
      const length = Number(this.buffer.subarray(start + this.prefix.length, newline).toString('latin1'));
      if (this.buffer.length < newline + 1 + length) return void (this.buffer = this.buffer.subarray(start));
      const frame = JSON.parse(this.buffer.subarray(newline + 1, newline + 1 + length).toString('utf8')) as Frame;
      this.buffer = this.buffer.subarray(newline + 1 + length);
      this.deliver(frame);
    }
  }

  /** Output outside frames (the driver's own crash report): the last few KiB are kept for error details. */
  private addNoise(bytes: Buffer): void {
    if (bytes.length) this.noise = (this.noise + bytes.toString('utf8')).slice(-4096);
  }

  private deliver(frame: Frame): void {
    if (frame.ready) {
      this.ready?.(frame);
      this.ready = undefined;
      return;
    }
    if (frame.id === undefined) return;
    this.waiting.get(frame.id)?.(frame);
  }
}
