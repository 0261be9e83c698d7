import { createHash } from 'node:crypto';
import { randomHex } from './random-hex.js';
import { ConfigError, SandboxError } from '../../errors.js';
import type { AttachedProcess, Sandbox } from '../types.js';
import { HARNESS_EXEC_OUTPUT_BYTES, killProcesses } from './kill-processes.js';
import { encodeCommand, isWellFormed, parseMarker, SHELL_SCRIPT, type ShellMarker } from './shell-script.js';
import type { CommandEvent, CommandResult, CommandRunner, RunOptions } from './types.js';

/** The longest marker the shell writes, with room to spare: two nonces, seven numbers and a working directory (PATH_MAX 4096). */
const MAX_MARKER_BYTES = 8192;

export interface ShellSessionOptions {
  /** Per-command time limit (default 10 s). */
  timeoutMs: number;
  /** Output kept per command (default 64 KiB); the rest is counted, not kept. */
  maxOutputBytes: number;
  /** A command that writes more than this is killed (default 16 × maxOutputBytes). */
  killOutputBytes: number;
  /** How long a new shell may take to report ready (default 10 s). */
  startupTimeoutMs: number;
  /**
   * After a kill, how long to wait for the shell to report before it is killed too (default
   * 3 s: under gVisor on a loaded host a shell took longer than 1 s to report after the kill,
   * and was replaced with its state lost).
   */
  graceMs: number;
  /** Environment for the shell, on top of the image's. */
  env: Readonly<Record<string, string>>;
  /**
   * The harness's own shell (a control shell: the scorer's probe, the launcher, the
   * restorer), which keeps the harness's capability. Default false: a shell that runs an
   * agent's commands is started confined (see AttachOptions.confined).
   */
  harness: boolean;
}

export const DEFAULT_SHELL_OPTIONS: Omit<ShellSessionOptions, 'killOutputBytes'> = {
  timeoutMs: 10_000,
  maxOutputBytes: 64 * 1024,
  startupTimeoutMs: 10_000,
  graceMs: 3_000,
  harness: false,
  env: { PAGER: 'cat', GIT_PAGER: 'cat', MANPAGER: 'cat', SYSTEMD_PAGER: 'cat', EDITOR: 'true', VISUAL: 'true', TERM: 'dumb' },
};

function resolveOptions(input: Partial<ShellSessionOptions>): ShellSessionOptions {
  const merged = { ...DEFAULT_SHELL_OPTIONS, ...input, env: { ...DEFAULT_SHELL_OPTIONS.env, ...input.env } };
  const options: ShellSessionOptions = { ...merged, killOutputBytes: input.killOutputBytes ?? 16 * merged.maxOutputBytes };
  for (const key of ['timeoutMs', 'maxOutputBytes', 'killOutputBytes', 'startupTimeoutMs', 'graceMs'] as const) {
    if (!Number.isFinite(options[key]) || options[key] <= 0) {
      throw new ConfigError(`shell.${key}`, 'must be a positive number');
    }
  }
  if (options.killOutputBytes < options.maxOutputBytes) {
    throw new ConfigError('shell.killOutputBytes', 'must be at least shell.maxOutputBytes');
  }
  return options;
}

/** {@link RunOptions} of a shell session. */
export interface ShellRunOptions extends RunOptions {
  /**
   * Shell code the command needs in place first (function definitions, variables), sent
   * once per shell process: ahead of the first command that names it, and again after the
   * shell is respawned: bash parses a long text slowly enough that a harness script sent
   * with every command would cost more than the command.
   */
  definitions?: readonly string[];
}

const NO_DEFINITIONS: readonly string[] = [];

/**
 * How long a handed-over shell may take to answer a new session (it is waiting already: a
 * live one answers in milliseconds; a dead one never does, and a new shell is started instead).
 */
const RESUME_TIMEOUT_MS = 2_000;

/** How often a running command's sandbox is checked against its disk limit (when watched). */
const DISK_CHECK_MS = 20;

type Outcome = 'marker' | 'exited' | 'timeout' | 'output-limit' | 'violation' | 'disk-limit';

/** The command in flight, or the start-up banner (seq 0). */
class PendingCommand {
  readonly chunks: Buffer[] = [];
  keptBytes = 0;
  totalBytes = 0;
  /** Set once the output passed the kill threshold, so it is reported once. */
  overLimit = false;
  marker: ShellMarker | undefined;
  /** The writable layer's size, when a check found it over the disk limit. */
  diskUsed: number | undefined;
  private settle!: (outcome: Outcome) => void;
  readonly outcome: Promise<Outcome>;

  constructor(
    readonly seq: number,
    /** Random per command: a marker naming it cannot have been written before the command was sent. */
    readonly token = '',
  ) {
    this.outcome = new Promise((resolve) => (this.settle = resolve));
  }

  /** The first settlement wins; later ones are ignored. Re-armed by {@link rearm}. */
  finish(outcome: Outcome): void {
    this.settle(outcome);
  }

  /** A fresh promise for the next phase (after a kill, wait for marker or exit again). */
  rearm(): Promise<Outcome> {
    return new Promise((resolve) => {
      this.settle = resolve;
      if (this.marker) resolve('marker');
    });
  }
}

const utf8 = new TextDecoder('utf-8');

const sleep = (ms: number) => new Promise<'slept'>((resolve) => setTimeout(() => resolve('slept'), ms).unref());

/**
 * A persistent bash session in a sandbox over one attached stream: cwd, variables and
 * functions persist between commands. Failures of a command (timeouts, floods, a shell
 * that exits or is replaced) come back as {@link CommandEvent}s in the result; only a
 * sandbox that can no longer run a shell raises {@link SandboxError}.
 */
export class ShellSession implements CommandRunner {
  private process: AttachedProcess | undefined;
  private alive = false;

  private breaches = 0;

  /**
   * Breaches of the protocol so far: seen by a command's result, or pending (seen while no
   * command ran). A scorer's shell with a breach cannot be trusted to score.
   */
  get violations(): number {
    return this.breaches + (this.violation === undefined ? 0 : 1);
  }

  /** Whether the shell is up (false while it is being respawned, and after close). */
  get isAlive(): boolean {
    return this.alive;
  }
  private nonce = '';
  private markerStart = Buffer.alloc(0);
  private markerEnd = Buffer.alloc(0);
  /** Unparsed bytes of the stream that carries markers (output in-band, else the control channel). */
  private carry = Buffer.alloc(0);
  /** Markers come in-band, in the output stream (the process has no control channel). */
  private inBand = true;
  /** The last sequence number whose marker came: a second marker for it is a forgery. */
  private answered = -1;
  /** A breach of the protocol seen while no command ran, reported with the next one. */
  private violation: string | undefined;
  private pending: PendingCommand | undefined;
  private seq = 0;
  private shellPid = 0;
  private lastOomKills = 0;
  private currentCwd = '/';
  private queue: Promise<unknown> = Promise.resolve();
  /** The definitions the current shell process has (see {@link ShellRunOptions.definitions}). */
  private defined = new Set<string>();
  private readonly options: ShellSessionOptions;

  private constructor(private readonly sandbox: Sandbox, options: Partial<ShellSessionOptions>) {
    this.options = resolveOptions(options);
  }

  /**
   * Starts a shell in `sandbox`.
   * @throws ConfigError for bad options; SandboxError when no shell can be started.
   */
  static async open(sandbox: Sandbox, options: Partial<ShellSessionOptions> = {}, cwd = '/'): Promise<ShellSession> {
    const session = new ShellSession(sandbox, options);
    session.currentCwd = cwd;
    // The sandbox's OOM-kill count is cumulative over its life (a pool's sandbox serves many
    // sessions): kills from before this session are not its own.
    const banner = await session.spawn();
    session.lastOomKills = Math.max(0, banner.oomKills);
    return session;
  }

  get cwd(): string {
    return this.currentCwd;
  }

  /**
   * Runs `command` and returns its result. Calls made while one runs wait their turn (a
   * control shell serves the scorer, the restorer and the launcher).
   */
  run(command: string, options: ShellRunOptions = {}): Promise<CommandResult> {
    const result = this.queue.then(() => this.runNow(command, options));
    this.queue = result.catch(() => undefined);
    return result;
  }

  private async runNow(command: string, options: ShellRunOptions): Promise<CommandResult> {
    const timeoutMs = options.timeoutMs ?? this.options.timeoutMs;
    const started = performance.now();
    const events: CommandEvent[] = [];
    if (this.violation !== undefined) return this.refuse(started, events);
    if (!this.alive) {
      await this.spawn();
      events.push({ kind: 'shell-restarted', reason: 'found-dead', cwd: this.currentCwd });
    }
    const missing = options.definitions?.filter((definition) => !this.defined.has(definition)) ?? NO_DEFINITIONS;
    for (const definition of missing) this.defined.add(definition);
    const pending = new PendingCommand(++this.seq, randomHex(8));
    this.pending = pending;
    this.process!.write(encodeCommand(pending.seq, missing.length > 0 ? `${missing.join('\n')}\n${command}` : command, pending.token));

    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const stopWatching = this.watchDisk(pending);
    const outcome = await Promise.race([
      pending.outcome,
      new Promise<Outcome | 'interrupted'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), timeoutMs);
        onAbort = () => resolve('interrupted');
        if (options.signal?.aborted) onAbort();
        else options.signal?.addEventListener('abort', onAbort, { once: true });
      }),
    ]);
    clearTimeout(timer);
    if (onAbort) options.signal?.removeEventListener('abort', onAbort);
    stopWatching();
    if (outcome === 'violation') return this.refuse(started, events);
    if (outcome === 'timeout') events.push({ kind: 'timed-out', afterMs: timeoutMs });
    if (outcome === 'interrupted') events.push({ kind: 'interrupted', afterMs: performance.now() - started });
    if (outcome === 'timeout' || outcome === 'interrupted' || outcome === 'output-limit' || outcome === 'disk-limit') {
      await this.interrupt(pending, events);
    } else if (outcome === 'exited') {
      // The shell's process may live on as what it exec'd (`exec sleep 9`): it is no shell of ours.
      await this.killShellProcess();
      await this.spawn();
      events.push({ kind: 'shell-restarted', reason: 'exited', cwd: this.currentCwd });
    }
    this.pending = undefined;
    if (this.violation !== undefined) return this.refuse(started, events);
    if (pending.marker) await this.checkLimits(pending.marker, events);
    this.checkDisk(pending, events);
    if (pending.totalBytes > pending.keptBytes) {
      events.push({
        kind: 'output-limit',
        shownBytes: pending.keptBytes,
        totalBytes: pending.totalBytes,
        killed: outcome === 'output-limit',
      });
    }
    return {
      output: utf8.decode(Buffer.concat(pending.chunks)),
      exitCode: pending.marker ? pending.marker.status : null,
      timedOut: outcome === 'timeout',
      outputBytes: pending.totalBytes,
      durationMs: performance.now() - started,
      cwd: this.currentCwd,
      events,
    };
  }

  /**
   * The protocol was breached (a forged or second marker, foreign bytes on the control
   * channel): nothing this shell reports can be trusted. The step's output is withheld (it
   * may hold another step's), every process in the sandbox is killed and a new shell started.
   */
  private async refuse(started: number, events: CommandEvent[]): Promise<CommandResult> {
    this.breaches++;
    const detail = this.violation ?? 'the shell broke the protocol';
    this.violation = undefined;
    this.pending = undefined;
    events.push({ kind: 'protocol-violation', detail });
    if (!(await killProcesses(this.sandbox, []))) await this.sandbox.restartProcesses();
    await this.respawnAfterKill(events);
    // Whatever the old shell still had in flight belongs to it, not to the new one.
    this.violation = undefined;
    return { output: '', exitCode: null, timedOut: false, outputBytes: 0, durationMs: performance.now() - started, cwd: this.currentCwd, events };
  }

  close(): void {
    this.alive = false;
    this.process?.close();
    this.process = undefined;
  }

  /** Kills what the command started; if the shell itself does not answer, replaces it. */
  private async interrupt(pending: PendingCommand, events: CommandEvent[]): Promise<void> {
    const next = pending.rearm();
    if (await killProcesses(this.sandbox, [this.shellPid])) {
      const after = await Promise.race([next, sleep(this.options.graceMs)]);
      if (after === 'marker') return;
      if (after === 'exited') return this.respawnAfterKill(events);
    }
    const exited = pending.rearm();
    const killed = await killProcesses(this.sandbox, []);
    if (!killed || (await Promise.race([exited, sleep(this.options.graceMs)])) === 'slept') {
      await this.sandbox.restartProcesses();
    }
    await this.respawnAfterKill(events);
  }

  private async respawnAfterKill(events: CommandEvent[]): Promise<void> {
    try {
      await this.spawn();
    } catch (error) {
      // Seen under load (and under gVisor after a disk-limit kill): the first shell after the
      // kill does not come up; a restart of the sandbox's processes clears whatever is left.
      if (!(error instanceof SandboxError)) throw error;
      await this.sandbox.restartProcesses();
      await this.spawn();
    }
    events.push({ kind: 'shell-restarted', reason: 'killed', cwd: this.currentCwd });
  }

  /**
   * While a command runs, checks the sandbox's disk every {@link DISK_CHECK_MS} (when its
   * limit is watched, not held by the engine); past the limit the command ends 'disk-limit'.
   * @returns the function that stops the checks.
   */
  private watchDisk(pending: PendingCommand): () => void {
    const exceeded = this.sandbox.disk?.exceeded;
    if (!exceeded) return () => undefined;
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    const check = () => {
      const used = exceeded();
      if (stopped) return;
      if (used !== undefined) {
        pending.diskUsed = used;
        return pending.finish('disk-limit');
      }
      timer = setTimeout(check, DISK_CHECK_MS);
    };
    timer = setTimeout(check, DISK_CHECK_MS);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }

  /** After a command: the disk check once more (one statfs), and the event when it is over. */
  private checkDisk(pending: PendingCommand, events: CommandEvent[]): void {
    const disk = this.sandbox.disk;
    if (!disk?.exceeded) return;
    const used = pending.diskUsed ?? disk.exceeded();
    if (used !== undefined) events.push({ kind: 'disk-limit', usedBytes: used, limitBytes: disk.limitBytes });
  }

  /** Reports OOM kills since the last command and stops a process flood. */
  private async checkLimits(marker: ShellMarker, events: CommandEvent[]): Promise<void> {
    if (marker.oomKills < 0) return;
    if (marker.oomKills > this.lastOomKills) {
      events.push({ kind: 'out-of-memory', kills: marker.oomKills - this.lastOomKills });
    }
    this.lastOomKills = marker.oomKills;
    if (Number.isFinite(marker.pidsMax) && marker.pidsMax > 0 && marker.pids >= marker.pidsMax * 0.9) {
      await killProcesses(this.sandbox, [this.shellPid]);
      events.push({ kind: 'process-limit', limit: marker.pidsMax });
    }
  }

  private async killShellProcess(): Promise<void> {
    if (this.shellPid <= 1) return;
    try {
      await this.sandbox.exec(['kill', '-KILL', String(this.shellPid)], { timeoutMs: 5_000, maxOutputBytes: HARNESS_EXEC_OUTPUT_BYTES });
    } catch (error) {
      if (!(error instanceof SandboxError && error.code === 'SANDBOX_LOST')) throw error;
    }
  }

  /**
   * What a handed-over shell's record notes: its environment's fingerprint. A shell is
   * resumed only by a session that would have started it with the same environment (the
   * other options are this side's: limits and timeouts apply to whichever session holds it).
   */
  private static environmentNote(env: ShellSessionOptions['env']): string {
    return createHash('sha256').update(JSON.stringify(Object.entries(env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))).digest('hex').slice(0, 16);
  }

  /**
   * Lets a later session — of this process or another — take this shell over (see
   * {@link resume}) as `role`: the shell moves to new pipes of the sandbox and waits there,
   * this session is closed. Only between commands.
   * @param role a plain word (`control`, `agent`): several shells of one sandbox are handed over under different ones.
   * @returns false when the sandbox cannot hand shells over (the session is closed all the same).
   */
  async handOver(role: string): Promise<boolean> {
    const note = ShellSession.environmentNote(this.options.env);
    const base = this.alive && this.pending === undefined ? await this.sandbox.handOver?.pipes(role, note).catch(() => undefined) : undefined;
    if (base !== undefined) {
      this.process?.write(`@handover ${base}\n`);
      // The line is in the pipe before our end closes (a pipe write this short is immediate; this is a margin).
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.close();
    return base !== undefined;
  }

  /**
   * A session on the shell an earlier session handed over as `role` in `sandbox`
   * ({@link handOver}), with a new nonce; undefined when none was handed over, it does not
   * answer, or it was started with another environment than `options` give (it is then let
   * go: its input ends, and it exits).
   */
  static async resume(sandbox: Sandbox, role: string, options: Partial<ShellSessionOptions> = {}): Promise<ShellSession | undefined> {
    const session = new ShellSession(sandbox, options);
    const taken = await sandbox.handOver?.take(role).catch(() => undefined);
    if (!taken) return undefined;
    if (taken.note !== ShellSession.environmentNote(session.options.env)) {
      taken.process.close();
      return undefined;
    }
    try {
      const banner = await session.connect(taken.process, RESUME_TIMEOUT_MS);
      session.lastOomKills = Math.max(0, banner.oomKills);
      return session;
    } catch {
      return undefined;
    }
  }

  /** The shell's process id in the sandbox (0 before it started). */
  get pid(): number {
    return this.shellPid;
  }

  /** @returns the new shell's start-up marker. */
  private async spawn(): Promise<ShellMarker> {
    this.process?.close();
    this.alive = false;
    const process = await this.sandbox.attach(['bash', '--noprofile', '--norc', '-c', SHELL_SCRIPT], {
      workdir: '/',
      env: { ...this.options.env, IC_CWD: this.currentCwd },
      confined: !this.options.harness,
    });
    return this.connect(process);
  }

  /**
   * Sends a new nonce to the shell on `process` and waits for its start-up marker.
   * @throws SandboxError SANDBOX_LOST when none comes in time (`process` is closed).
   */
  private async connect(process: AttachedProcess, timeoutMs = this.options.startupTimeoutMs): Promise<ShellMarker> {
    this.alive = false;
    this.defined = new Set();
    this.nonce = randomHex(16);
    this.markerStart = Buffer.from(`\x1e${this.nonce} `);
    this.markerEnd = Buffer.from(`\x1f${this.nonce}\n`);
    this.carry = Buffer.alloc(0);
    this.answered = -1;
    this.seq = 0;
    const banner = new PendingCommand(0);
    this.pending = banner;
    this.process = process;
    this.inBand = !process.hasControlChannel;
    process.listen({
      output: (chunk) => {
        if (this.process !== process) return;
        if (this.inBand) this.onMarkerStream(chunk);
        else this.appendOutput(chunk);
      },
      control: (chunk) => {
        if (this.process === process) this.onMarkerStream(chunk);
      },
      exit: () => {
        if (this.process !== process) return;
        this.alive = false;
        this.pending?.finish('exited');
      },
    });
    process.write(`${this.nonce}\n`);
    const outcome = await Promise.race([banner.outcome, sleep(timeoutMs)]);
    if (outcome !== 'marker') {
      process.close();
      throw new SandboxError('SANDBOX_LOST', 'A shell could not be started in the sandbox', {
        details: { sandbox: this.sandbox.id, outcome, output: Buffer.concat(banner.chunks).toString('utf8').slice(0, 2000) },
      });
    }
    this.alive = true;
    this.pending = undefined;
    return banner.marker!;
  }

  /**
   * Bytes of the stream that carries markers. In-band, the text between markers is the
   * command's output; on a control channel only the shell writes, so any other byte there
   * is a breach of the protocol.
   */
  private onMarkerStream(chunk: Buffer): void {
    let data = this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk;
    for (;;) {
      const start = data.indexOf(this.markerStart);
      if (start < 0) {
        // Keep a possible partial marker start at the end for the next chunk.
        const keep = Math.min(this.markerStart.length - 1, data.length);
        const tail = data.lastIndexOf(0x1e, data.length - 1);
        const cut = tail >= 0 && tail >= data.length - keep ? tail : data.length;
        this.onText(data.subarray(0, cut));
        this.carry = Buffer.from(data.subarray(cut));
        return;
      }
      this.onText(data.subarray(0, start));
      const end = data.indexOf(this.markerEnd, start + this.markerStart.length);
      if (end < 0) {
        if (data.length - start > MAX_MARKER_BYTES) {
          // The shell's markers are short (a working directory is at most PATH_MAX): this
          // start, with the nonce, is a forgery that would otherwise hold every later byte.
          this.carry = Buffer.alloc(0);
          this.breach(`a marker start with no end in ${MAX_MARKER_BYTES} bytes`);
          return;
        }
        this.carry = Buffer.from(data.subarray(start));
        return;
      }
      const marker = parseMarker(data.subarray(start + this.markerStart.length, end).toString('utf8'));
      data = data.subarray(end + this.markerEnd.length);
      this.onMarker(marker);
    }
  }

  private onText(bytes: Buffer): void {
    if (this.inBand) this.appendOutput(bytes);
    else if (bytes.length > 0) this.breach(`${bytes.length} byte(s) that are no marker on the shell's control channel`);
  }

  /** Records a breach of the protocol; the command in flight, if any, ends with it. */
  private breach(detail: string): void {
    this.violation ??= detail;
    const pending = this.pending;
    if (pending && pending.seq > 0) pending.finish('violation');
  }

  private appendOutput(bytes: Buffer): void {
    const pending = this.pending;
    if (!pending || bytes.length === 0) return;
    pending.totalBytes += bytes.length;
    const room = this.options.maxOutputBytes - pending.keptBytes;
    if (room > 0) {
      const kept = bytes.length <= room ? bytes : bytes.subarray(0, room);
      pending.chunks.push(Buffer.from(kept));
      pending.keptBytes += kept.length;
    }
    if (pending.totalBytes > this.options.killOutputBytes && !pending.overLimit) {
      pending.overLimit = true;
      pending.finish('output-limit');
    }
  }

  /**
   * Exactly one marker per command, in order: a marker for a command already answered, for
   * none sent, or while none runs, was not written by the protocol's own loop.
   */
  private onMarker(marker: ShellMarker): void {
    const pending = this.pending;
    if (!isWellFormed(marker)) return this.breach('a malformed end-of-command marker');
    if (marker.seq <= this.answered) return this.breach(`a second end-of-command marker for command ${marker.seq}`);
    if (!pending || marker.seq !== pending.seq || !Number.isInteger(marker.seq)) {
      return this.breach(`an end-of-command marker for command ${marker.seq} while ${pending ? `command ${pending.seq} ran` : 'no command ran'}`);
    }
    if (marker.token !== pending.token) return this.breach(`an end-of-command marker for command ${marker.seq} with a token it was not sent`);
    // The start-up marker comes before any command ran: its pid is the shell's.
    if (marker.seq === 0) this.shellPid = marker.shellPid;
    else if (marker.shellPid !== this.shellPid) return this.breach(`an end-of-command marker from process ${marker.shellPid}, not the shell`);
    this.answered = marker.seq;
    this.currentCwd = marker.cwd;
    pending.marker = marker;
    if (this.inBand) return pending.finish('marker');
    // The output written before the marker is already in its pipe; it is read in this same
    // turn of the event loop (both descriptors were ready together): settle after it.
    setImmediate(() => pending.finish('marker'));
  }
}
