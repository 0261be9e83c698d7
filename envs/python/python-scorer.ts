import { SandboxError } from '../../src/errors.js';
import type { Sandbox, SandboxRuntime, SandboxSpec } from '../../src/sandbox/types.js';
import { FrameChannel } from './frame-channel.js';
import type { FrameObject } from './frame-reader.js';
import type { RanAction } from './python-session.js';
import { SCORER_SOURCE } from './images.js';

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
    }
  | { kind: 'apps'; submitted: string; cases: readonly { input: string; output: string }[]; testTimeoutMs: number };

export type ScoreReply = { pred: MbppOutcome[]; gold: MbppOutcome[] } | { results: AppsOutcome[] };

/** Characters of one outcome field the scorer keeps (longer text is cut and a sha256 of the whole added). */
const RESULT_CHARS = 64 * 1024;
/** Bytes of one outcome's frame at most: three fields of RESULT_CHARS, each JSON-escaped (≤ 6 bytes a character). */
const OUTCOME_BYTES = 3 * 6 * (RESULT_CHARS + 200);

export function isMbppOutcome(value: unknown): value is MbppOutcome {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  return Object.entries(value).every(([k, v]) => (k === 'output' || k === 'error' || k === 'detail') && typeof v === 'string');
}

export function isAppsOutcome(value: unknown): value is AppsOutcome {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const o = value as Record<string, unknown>;
  return Object.keys(o).length === 3 && typeof o.passed === 'boolean' && typeof o.output === 'string' && typeof o.error === 'string';
}

/** `frame[key]` when it is a list of `count` outcomes of the right shape, else undefined. */
export function outcomes<T>(frame: FrameObject, key: string, count: number, valid: (v: unknown) => v is T): T[] | undefined {
  const list = frame[key];
  return Array.isArray(list) && list.length === count && list.every(valid) ? (list as T[]) : undefined;
}

/** Whether `sandbox` still runs a process to completion (it is alive, whatever happened to the scorer in it). */
async function answers(sandbox: Sandbox): Promise<boolean> {
  const result = await sandbox.exec(['true'], { timeoutMs: 10_000 }).catch(() => undefined);
  return result?.exitCode === 0;
}

/** Every test of `request` failed with `message`. */
function failedSubmissionOutcomes(request: ScoreRequest, message: string): MbppOutcome[] | AppsOutcome[] {
  if (request.kind === 'apps') return request.cases.map(() => ({ passed: false, output: '', error: message }));
  return request.tests.map(() => ({ error: `Error: ${message}`, detail: message }));
}

/**
 * Scores Python submissions where the agent cannot reach: each score takes a new sandbox
 * of the env's image (one made ahead while the episode runs), starts envs/python/scorer.py
 * in it from stdin, runs the gold's tests (before any agent code runs there), then replays
 * the agent's actions (their code, as data: {@link RanAction}) in a new interpreter and runs
 * the submission's tests; the sandbox is thrown away. Nothing the agent did in its own
 * sandbox (a patched runner, a neutered `exec`, a replaced file or interpreter, a process
 * left writing into pipes) exists there.
 */
export class PythonScorer {
  private spare: Promise<Sandbox> | undefined;
  private readonly removing = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly runtime: SandboxRuntime,
    private readonly spec: SandboxSpec,
    private readonly memoryBytes: number,
  ) {}

  /** Makes the next score's sandbox now (in the background), so a score does not wait for one. */
  prepare(): void {
    if (this.closed || this.spare) return;
    const made = this.runtime.create(this.spec);
    made.catch(() => undefined);
    this.spare = made;
  }

  /**
   * Scores `request` against an interpreter that ran `history`.
   * @throws SandboxError when no sandbox can be made, or the scorer dies or answers wrongly.
   */
  async score(request: ScoreRequest, history: readonly RanAction[]): Promise<ScoreReply> {
    if (this.closed) throw new SandboxError('SANDBOX_UNAVAILABLE', 'The Python scorer was closed');
    this.prepare();
    const made = this.spare!;
    this.spare = undefined;
    const sandbox = await made;
    const count = request.kind === 'mbpp' ? request.tests.length : request.cases.length;
    const { channel, nonce } = await FrameChannel.start(
      sandbox,
      'Python scorer',
      { name: '<intercode scorer>', source: await SCORER_SOURCE() },
      count * OUTCOME_BYTES + 64 * 1024,
    ).catch((error: unknown) => {
      this.remove(sandbox);
      throw error;
    });
    try {
      channel.send({ op: 'hello', nonce });
      await channel.awaitReady(30_000);
      const perTest = request.testTimeoutMs + 3_000;
      const common = { testTimeoutMs: request.testTimeoutMs, memoryBytes: this.memoryBytes };
      let gold: MbppOutcome[] | undefined;
      if (request.kind === 'mbpp') {
        // The gold's outcomes arrive before any of the agent's code runs in this sandbox.
        const frame = await channel.request({ op: 'gold', setup: request.setup, gold: request.gold, tests: request.tests, ...common }, count * perTest + 10_000);
        gold = outcomes(frame, 'gold', count, isMbppOutcome);
        if (!gold) throw this.wrong(sandbox, 'gold');
      }
      const replayMs = history.reduce((sum, a) => sum + a.timeoutMs + 1_000, 0);
      let frame: FrameObject;
      try {
        frame = await channel.request({ op: 'pred', ...request, history, ...common }, replayMs + count * perTest + 20_000);
      } catch (error) {
        // The sandbox still answers: the scorer was stopped (or its stream spoilt) from inside,
        // by the only code that ran there besides ours, the submission's. Its tests fail.
        if (!(error instanceof SandboxError) || !(await answers(sandbox))) throw error;
        const failed = failedSubmissionOutcomes(request, `the submission's code stopped the scorer (${error.message})`);
        return request.kind === 'apps' ? { results: failed as AppsOutcome[] } : { pred: failed as MbppOutcome[], gold: gold! };
      }
      if (request.kind === 'apps') {
        const results = outcomes(frame, 'results', count, isAppsOutcome);
        if (!results) throw this.wrong(sandbox, 'results');
        return { results };
      }
      const pred = outcomes(frame, 'pred', count, isMbppOutcome);
      if (!pred) throw this.wrong(sandbox, 'pred');
      return { pred, gold: gold! };
    } finally {
      channel.close();
      this.remove(sandbox);
      this.prepare();
    }
  }

  /** Removes the spare sandbox and waits for every removal under way. */
  async close(): Promise<void> {
    this.closed = true;
    const spare = this.spare;
    this.spare = undefined;
    if (spare) await spare.then((s) => this.remove(s)).catch(() => undefined);
    await Promise.all(this.removing);
  }

  private remove(sandbox: Sandbox): void {
    const removal = sandbox.destroy().catch(() => undefined);
    this.removing.add(removal);
    void removal.finally(() => this.removing.delete(removal));
  }

  private wrong(sandbox: Sandbox, field: string): SandboxError {
    return new SandboxError('SANDBOX_LOST', `The Python scorer answered with a malformed "${field}"`, { details: { sandbox: sandbox.id } });
  }
}
