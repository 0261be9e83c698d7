import { ConfigError, SandboxError } from '../../src/errors.js';
import type { CommandEvent, CommandResult, CommandRunner, RunOptions } from '../../src/sandbox/shell/types.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import { FrameChannel } from './frame-channel.js';
import type { FrameObject } from './frame-reader.js';
import { DRIVER_SOURCE } from './images.js';

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

export interface ExecReply {
  executed: boolean;
  output: string;
  outputBytes: number;
  strays: number;
  timedOut: boolean;
  outputLimit: boolean;
  restarted: string | null;
}

/** One action the interpreter ran, as the scorer replays it (see envs/python/scorer.py). */
export interface RanAction {
  code: string;
  timeoutMs: number;
}

/**
 * The driver's answer to an action, checked field by field (anything else: undefined), its
 * output cut to `maxBytes` (the driver keeps no more; a driver that sends more is not ours).
 */
export function execReply(frame: FrameObject, maxBytes: number): ExecReply | undefined {
  const { executed, output, outputBytes, strays, timedOut, outputLimit, restarted } = frame;
  if (typeof executed !== 'boolean' || typeof output !== 'string' || typeof timedOut !== 'boolean' || typeof outputLimit !== 'boolean') return undefined;
  if (!Number.isSafeInteger(outputBytes) || !Number.isSafeInteger(strays) || (outputBytes as number) < 0 || (strays as number) < 0) return undefined;
  if (restarted !== null && typeof restarted !== 'string') return undefined;
  const bytes = Buffer.from(output);
  const kept = bytes.length > maxBytes ? bytes.subarray(0, maxBytes).toString('utf8') : output;
  return { executed, output: kept, outputBytes: Math.max(outputBytes as number, bytes.length), strays: strays as number, timedOut, outputLimit, restarted: restarted?.slice(0, 500) ?? null };
}

/** Bytes of the longest frame the driver sends for an action keeping `keepBytes` of output (JSON escapes take up to 6 bytes a byte). */
export const maxExecFrameBytes = (keepBytes: number) => 6 * keepBytes + 64 * 1024;

/**
 * A Python interpreter in a sandbox, driven over the attached stdio of the in-sandbox
 * driver (envs/python/driver.py, sent over stdin at each start): definitions persist
 * between actions, an expression's value is shown as a REPL shows it, an exception comes
 * back as its traceback. Failures of an action (time limit, output flood, os._exit, a
 * crash) are results with notes; a driver that cannot be reached, or that sends anything
 * that is not a well-formed answer, raises {@link SandboxError}. The session never scores:
 * it records the actions its interpreter ran ({@link history}) for a scorer to replay
 * elsewhere (see PythonScorer).
 */
export class PythonSession implements CommandRunner {
  readonly cwd = '/';
  private channel: FrameChannel | undefined;
  private ran: RanAction[] = [];
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

  /** The session's options, resolved. */
  get settings(): Readonly<PythonSessionOptions> {
    return this.options;
  }

  /** The actions the current interpreter ran, in order (a new interpreter starts with none). */
  get history(): readonly RanAction[] {
    return this.ran;
  }

  async run(code: string, options: RunOptions = {}): Promise<CommandResult> {
    const started = performance.now();
    const notes: string[] = [];
    if (!this.channel?.open) {
      await this.spawn();
      notes.push('the interpreter had stopped and a new one was started (definitions were lost)');
    }
    const timeoutMs = options.timeoutMs ?? this.options.timeoutMs;
    const frame = await this.request(
      { op: 'exec', code, timeoutMs, graceMs: this.options.graceMs, keepBytes: this.options.maxOutputBytes, killBytes: this.options.killOutputBytes },
      timeoutMs + this.options.graceMs + 10_000,
    );
    const reply = execReply(frame, this.options.maxOutputBytes);
    if (!reply) throw this.broken('answered an action with a reply of the wrong shape');
    // A restarted interpreter lost its namespace: the scorer replays from the next action on.
    if (reply.restarted) this.ran = [];
    else this.ran.push({ code, timeoutMs });
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

  /**
   * Replaces the interpreter's namespace with a fresh one that ran each of `codes` (each
   * within `timeoutMs`; failures ignored): InterCode's scoring left the gold's namespace so.
   * @throws SandboxError
   */
  async load(codes: readonly string[], timeoutMs: number): Promise<void> {
    if (!this.channel?.open) await this.spawn();
    const frame = await this.request({ op: 'load', codes, timeoutMs }, (timeoutMs + 3_000) * (codes.length + 1) + 10_000);
    if (frame.executed !== true) throw this.broken('answered a load with a reply of the wrong shape');
    this.ran = codes.map((code) => ({ code, timeoutMs }));
  }

  close(): void {
    this.channel?.close();
    this.channel = undefined;
  }

  private async request(body: Record<string, unknown>, backstopMs: number): Promise<FrameObject> {
    try {
      return await this.channel!.request(body, backstopMs);
    } catch (error) {
      this.close();
      throw error;
    }
  }

  private broken(why: string): SandboxError {
    this.close();
    return new SandboxError('SANDBOX_LOST', `The Python driver ${why}`, { details: { sandbox: this.sandbox.id } });
  }

  private async spawn(): Promise<void> {
    this.close();
    this.ran = [];
    const { channel } = await FrameChannel.start(
      this.sandbox,
      'Python driver',
      {
        name: '<intercode driver>',
        source: await DRIVER_SOURCE(),
        args: (nonce) => [nonce],
        env: { IC_MEMORY_BYTES: String(this.options.memoryBytes) },
      },
      maxExecFrameBytes(this.options.maxOutputBytes),
    );
    this.channel = channel;
    try {
      await channel.awaitReady(this.options.startupTimeoutMs);
    } catch (error) {
      this.close();
      throw new SandboxError('SANDBOX_LOST', 'The Python driver could not be started in the sandbox', {
        details: { sandbox: this.sandbox.id, output: channel.noise.slice(-2000) },
        cause: error,
      });
    }
  }
}
