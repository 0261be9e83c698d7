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

/** One global of the interpreter's namespace as the driver's observer saw it (envs/python/driver.py describe_namespace). */
export interface ObservedGlobal {
  name: string;
  /** Its type's module and qualified name. */
  type: string;
  /** Characters of its canonical repr, and their sha256 (what is compared). */
  reprChars: number;
  reprSha256: string;
  /** The repr's first characters (shown in a refusal, not compared). */
  head: string;
}

/** What {@link PythonSession.observe} reads: the namespace's globals, or why they cannot be read. */
export type NamespaceReading = { globals: ObservedGlobal[] } | { refused: string; name?: string; error?: string };

function isObservedGlobal(value: unknown): value is ObservedGlobal {
  if (typeof value !== 'object' || value === null) return false;
  const g = value as Record<string, unknown>;
  return typeof g.name === 'string' && typeof g.type === 'string' && Number.isSafeInteger(g.reprChars) && typeof g.reprSha256 === 'string' && /^[0-9a-f]{64}$/.test(g.reprSha256) && typeof g.head === 'string';
}

/** The driver's `observed` field checked (anything else: undefined). */
function namespaceReading(observed: unknown): NamespaceReading | undefined {
  if (typeof observed !== 'object' || observed === null) return undefined;
  const o = observed as Record<string, unknown>;
  if (typeof o.refused === 'string') {
    return { refused: o.refused.slice(0, 100), ...(typeof o.name === 'string' ? { name: o.name.slice(0, 200) } : {}), ...(typeof o.error === 'string' ? { error: o.error.slice(0, 200) } : {}) };
  }
  return Array.isArray(o.globals) && o.globals.every(isObservedGlobal) ? { globals: o.globals } : undefined;
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
  /** Why the interpreter was replaced outside an action (an observation it did not answer): told with the next action's output. */
  private replacedBetweenActions: string | undefined;
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
    if (this.replacedBetweenActions) notes.push(this.replacedBetweenActions);
    this.replacedBetweenActions = undefined;
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

  /**
   * The namespace's globals as an observer sees them: read by a fork of the interpreter
   * (a `__repr__` that changes state changes the fork's copy only), within `timeoutMs` in
   * all, each repr made canonical (no object addresses; sets' elements sorted) and hashed,
   * its first `headChars` characters kept. A worker that does not answer (its code patched by
   * an action) is replaced: its definitions are lost, and the next action's output says so.
   * @throws SandboxError when the driver cannot be reached or answers out of shape.
   */
  async observe(limits: { timeoutMs: number; headChars: number; maxGlobals: number }): Promise<NamespaceReading> {
    if (!this.channel?.open) await this.spawn();
    const frame = await this.request({ op: 'observe', ...limits }, limits.timeoutMs + 15_000);
    if (typeof frame.restarted === 'string') {
      this.ran = [];
      this.replacedBetweenActions = `the interpreter ${frame.restarted.slice(0, 200)}; a new one was started and definitions were lost`;
    }
    const reading = namespaceReading(frame.observed);
    if (!reading) throw this.broken('answered an observation with a reply of the wrong shape');
    return reading;
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
