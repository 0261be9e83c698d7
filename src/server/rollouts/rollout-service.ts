import type { IncomingMessage, ServerResponse } from 'node:http';
import { createStrategy, OpenAiChatClient, type EnvAgentFacts } from '../../agents/index.js';
import type { TaskEnv } from '../../env/types.js';
import type { EpisodeExecutor } from '../../eval/index.js';
import { formatRecord, sampleGroups, type RolloutRecord } from '../../rollouts/index.js';
import type { EnvSlots } from '../env-slots.js';
import { WireError } from '../protocol.js';
import { BodyTooLargeError, readJsonBody } from '../transports/http-body.js';
import { CancellableEnv } from './cancellable-env.js';
import { parseRolloutRequest, type RolloutRequest } from './rollout-request.js';

export interface RolloutServiceOptions {
  slots: EnvSlots;
  /** The env's prompts and step scoring (the strategies are built with them). */
  agentFacts: EnvAgentFacts;
  maxMessageBytes: number;
  /** intercode-ts's version (ATIF's agent.version). */
  version: string;
  log: (line: string) => void;
  /** Called with the number of episodes each streamed line carries (the server's metrics count them). */
  onStreamed?: (episodes: number) => void;
}

/** `POST /rollouts` as an OpenAPI path item (listed in `GET /openapi.json`). */
export const ROLLOUTS_PATH_ITEM: Record<string, unknown> = {
  post: {
    summary: 'K episodes of given tasks against the caller\'s OpenAI-compatible server, rollout records streamed as they finish',
    tags: ['Rollouts'],
    requestBody: { content: { 'application/json': { schema: { type: 'object' } } } },
    responses: {
      200: { description: 'NDJSON: {"type":"episode"|"group"|"error"|"end",…} lines (docs/server.md)', content: { 'application/x-ndjson': { schema: { type: 'object' } } } },
      413: { description: 'body over --max-message-bytes' },
      422: { description: 'a field out of range, named in detail' },
      503: { description: 'CAPACITY_REACHED: not enough free env slots' },
    },
  },
};

/** What the service has done, for tests and metrics. */
export interface RolloutCounts {
  /** Requests that started streaming. */
  started: number;
  /** Requests refused for want of a free env slot (CAPACITY_REACHED). */
  refused: number;
  /** Requests whose client went away before the end (their episodes were stopped). */
  cancelled: number;
  /** Episodes streamed (in episode or group lines). */
  episodes: number;
  /** Requests running now. */
  active: number;
}

/** A line of the stream. */
type StreamLine =
  | { type: 'episode'; record: string }
  | { type: 'group'; task_id: string; records: string[] }
  | { type: 'error'; code: string; message: string; retryable: boolean }
  | { type: 'end'; episodes: number; groups: number; elapsed_s: number };

/** Writes a line whose records are already JSON text (formatRecord's floats kept as written). */
function lineText(line: StreamLine): string {
  if (line.type === 'episode') return `{"type":"episode","record":${line.record}}\n`;
  if (line.type === 'group') return `{"type":"group","task_id":${JSON.stringify(line.task_id)},"records":[${line.records.join(',')}]}\n`;
  return `${JSON.stringify(line)}\n`;
}

/**
 * `POST /rollouts`: rollouts as a service. A trainer names tasks, K, its OpenAI-compatible
 * server, sampling, strategy, turn limit and the policy version it is at; the service plays
 * the episodes on env slots it takes from the server's {@link EnvSlots} (the same slots
 * sessions use, so sessions and rollouts share one bound) and streams NDJSON as they finish:
 * `{"type":"episode","record":…}` or `{"type":"group","task_id","records":[…]}` lines, with
 * records exactly as `collect --format` writes them, then one `{"type":"end",…}` line (or
 * `{"type":"error",…}` when an episode failed). When the client goes away, episodes stop at
 * their next model request or action and their slots go back at once. It knows nothing of
 * any env's kind.
 */
export class RolloutService {
  private readonly running = new Set<{ stop: AbortController; done: Promise<void> }>();
  private readonly counts = { started: 0, refused: 0, cancelled: 0, episodes: 0 };

  constructor(private readonly options: RolloutServiceOptions) {}

  stats(): RolloutCounts {
    return { ...this.counts, active: this.running.size };
  }

  /**
   * Answers one request: 422 with `{detail, code: VALIDATION_ERROR, field}` for a bad body,
   * 503 `CAPACITY_REACHED` when no env slot is free, else 200 and the stream.
   */
  async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const { slots } = this.options;
    let parsed: RolloutRequest;
    const envs: TaskEnv[] = [];
    try {
      if (request.method !== 'POST') throw new WireError('VALIDATION_ERROR', '/rollouts takes POST', { allow: 'POST' });
      const probe = slots.take();
      if (!probe) throw capacityError(slots);
      envs.push(probe);
      parsed = parseRolloutRequest(await readJsonBody(request, this.options.maxMessageBytes), probe.tasks.length);
      const wanted = Math.min(parsed.parallel ?? Number.MAX_SAFE_INTEGER, parsed.tasks.length * parsed.samplesPerTask);
      while (envs.length < wanted) {
        const env = slots.take();
        if (!env) break;
        envs.push(env);
      }
      if (parsed.parallel !== undefined && envs.length < wanted) throw capacityError(slots, wanted, envs.length);
    } catch (error) {
      await Promise.all(envs.map((env) => slots.give(env)));
      const wire = error instanceof WireError ? error : new WireError('VALIDATION_ERROR', error instanceof Error ? error.message : String(error));
      if (wire.code === 'CAPACITY_REACHED') this.counts.refused += 1;
      const status =
        wire.code === 'CAPACITY_REACHED' ? 503 : request.method !== 'POST' ? 405 : wire instanceof BodyTooLargeError ? 413 : wire.code === 'INVALID_JSON' || wire.code === 'VALIDATION_ERROR' ? 422 : 500;
      const body = JSON.stringify({ ...wire.extra, detail: wire.message, code: wire.code, retryable: wire.retryable });
      response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      response.end(body);
      return;
    }
    const stop = new AbortController();
    const run = { stop, done: this.stream(parsed, envs, stop, response) };
    this.running.add(run);
    try {
      await run.done;
    } finally {
      this.running.delete(run);
    }
  }

  /** Stops every running request (their clients get no end line) and waits until their env slots are back. */
  async close(): Promise<void> {
    for (const run of this.running) run.stop.abort('the server is shutting down');
    await Promise.allSettled([...this.running].map((run) => run.done));
  }

  private async stream(req: RolloutRequest, envs: TaskEnv[], stop: AbortController, response: ServerResponse): Promise<void> {
    const { slots } = this.options;
    this.counts.started += 1;
    const onClose = () => {
      if (!response.writableFinished) stop.abort('the client went away');
    };
    response.on('close', onClose);
    response.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
    response.flushHeaders();
    const write = async (line: StreamLine) => {
      if (stop.signal.aborted || response.destroyed) return;
      if (!response.write(lineText(line))) await new Promise<void>((resolve) => {
        const settle = () => {
          response.off('drain', settle);
          response.off('close', settle);
          resolve();
        };
        response.once('drain', settle).once('close', settle);
      });
    };
    const started = performance.now();
    let groups = 0;
    let episodes = 0;
    try {
      const model = new OpenAiChatClient({
        baseUrl: req.baseUrl,
        model: req.model,
        temperature: req.temperature,
        topP: req.topP,
        maxTokens: req.maxTokens,
        timeoutMs: req.requestTimeoutMs,
        retries: req.retries,
        tokens: req.tokens,
        signal: stop.signal,
        ...(req.apiKey ? { apiKey: req.apiKey } : {}),
      });
      const strategy = createStrategy(req.strategy, { model, prompt: this.options.agentFacts.prompt, refineTurns: 0 });
      const all = envs[0]!.tasks;
      const tasks = req.tasks.map((i) => all[i]!);
      const format = (r: RolloutRecord) => formatRecord(r, req.format, this.options.version);
      await sampleGroups({
        envName: slots.envName,
        stepScoring: this.options.agentFacts.stepScoring,
        dataset: `(served ${slots.envName} tasks)`,
        strategy,
        model: req.model,
        tasks,
        executor: leasedExecutor(envs.map((env) => new CancellableEnv(env, stop.signal))),
        turns: req.turnLimit,
        samplesPerTask: req.samplesPerTask,
        seed: req.seed,
        temperature: req.temperature,
        scaleAdvantages: req.scaleAdvantages,
        stamp: `rollout-${Date.now().toString(36)}`,
        policyVersion: req.policyVersion,
        signal: stop.signal,
        onEpisode: (_done, record) => {
          episodes += 1;
          if (req.stream === 'episode') {
            this.counts.episodes += 1;
            this.options.onStreamed?.(1);
            void write({ type: 'episode', record: format(record) });
          }
        },
        onGroup: async (records) => {
          groups += 1;
          if (req.stream === 'group') {
            this.counts.episodes += records.length;
            this.options.onStreamed?.(records.length);
            await write({ type: 'group', task_id: records[0]!.task_id, records: records.map(format) });
          }
        },
      });
      if (!stop.signal.aborted) await write({ type: 'end', episodes, groups, elapsed_s: (performance.now() - started) / 1000 });
    } catch (error) {
      if (!stop.signal.aborted) {
        const code = (error as { code?: unknown })?.code;
        this.options.log(`intercode serve: a rollout failed: ${error instanceof Error ? error.message : String(error)}`);
        await write({
          type: 'error',
          code: typeof code === 'string' ? code : 'EXECUTION_ERROR',
          message: error instanceof Error ? error.message : String(error),
          retryable: (error as { retryable?: unknown })?.retryable === true,
        });
      }
    } finally {
      if (stop.signal.aborted) this.counts.cancelled += 1;
      response.off('close', onClose);
      await Promise.all(envs.map((env) => slots.give(env)));
      response.end();
    }
  }
}

function capacityError(slots: EnvSlots, wanted?: number, free?: number): WireError {
  const what = wanted === undefined ? `all ${slots.capacity} env slots are in use` : `parallel ${wanted} asked for, ${free} of ${slots.capacity} env slots free`;
  return new WireError('CAPACITY_REACHED', what, { in_use: slots.inUse, capacity: slots.capacity });
}

/**
 * Plays jobs on a fixed set of envs, one job per env at a time; once `signal` aborts no job
 * starts, and errors of cancelled episodes are not errors.
 * @throws the first error a job threw (its episode failed for a reason other than cancellation).
 */
function leasedExecutor(envs: readonly TaskEnv[]): EpisodeExecutor {
  return {
    async forEach(jobs, play, signal) {
      let next = 0;
      let failure: { error: unknown } | undefined;
      const worker = async (env: TaskEnv) => {
        while (!signal?.aborted && !failure && next < jobs.length) {
          const job = jobs[next++]!;
          try {
            await play(env, job);
          } catch (error) {
            if (!signal?.aborted) failure ??= { error };
          }
        }
      };
      await Promise.all(envs.map(worker));
      if (failure) throw failure.error;
    },
    async close() {},
  };
}
