/**
 * Test doubles and clients for the server tests: a scripted env (no Docker) whose actions
 * say what happens, a WebSocket client that queues the server's messages, and a server on
 * a free loopback port.
 */
import { WebSocket } from 'ws';
import type { Task } from '../../src/datasets/index.js';
import type { ResetOptions, ResetResult, Score, StepResult, TaskEnv } from '../../src/env/types.js';
import { EnvStateError, SandboxError } from '../../src/errors.js';
import { EnvServer, type EnvServerOptions, type EnvSlots } from '../../src/server/index.js';
import { ENV_PLUGINS } from '../../envs/index.js';
import { bashPlugin } from '../../envs/bash/plugin.js';

export const tasks: Task[] = [0, 1, 2].map((index) => ({ index, id: String(index), query: `query ${index}`, gold: `gold ${index}`, metadata: {} }));

/**
 * Actions: `sleep N` waits N ms; `lose` is a lost sandbox (truncated, as SandboxEnv reports
 * it); `crash` throws a plain error; `submit` scores 1 when the last action was the gold.
 * `failResets` makes reset throw a SandboxError (no sandbox to be had).
 */
export class ScriptedEnv implements TaskEnv {
  readonly id = 'scripted';
  readonly tasks = tasks;
  failResets = false;
  resets = 0;
  private task: Task | null = null;
  private last = '';
  private ended = true;

  async reset(options: ResetOptions = {}): Promise<ResetResult> {
    if (this.failResets) throw new SandboxError('SANDBOX_UNAVAILABLE', 'no sandbox: engine down');
    this.resets += 1;
    this.task = typeof options.task === 'object' ? options.task : tasks[options.task ?? 0]!;
    this.last = '';
    this.ended = false;
    return { observation: this.task.query, info: { task: this.task } };
  }

  async step(action: string): Promise<StepResult> {
    if (this.ended) throw new EnvStateError('step() called after the episode ended; call reset()');
    const base = { actionExecuted: true, exitCode: 0, durationMs: 1, events: [] };
    if (action === 'submit') {
      const score = await this.peekScore();
      this.ended = true;
      return { observation: this.last, reward: score.reward, terminated: true, truncated: false, info: { ...base, score } };
    }
    if (action === 'lose') {
      this.ended = true;
      const truncation = { reason: 'sandbox-lost' as const, message: 'container died' };
      return { observation: '[lost]', reward: 0, terminated: false, truncated: true, info: { ...base, actionExecuted: false, exitCode: null, truncation } };
    }
    if (action === 'crash') throw new Error('scripted crash');
    const sleep = /^sleep (\d+)$/.exec(action);
    if (sleep) await new Promise((resolve) => setTimeout(resolve, Number(sleep[1])));
    this.last = action;
    return { observation: `ran ${action}`, reward: 0, terminated: false, truncated: false, info: base };
  }

  async peekScore(): Promise<Score> {
    return { reward: this.last === this.task?.gold ? 1 : 0, parts: {}, details: {} };
  }

  async close(): Promise<void> {
    this.ended = true;
  }
}

export interface Message {
  type: string;
  data: Record<string, unknown> & { observation?: Record<string, unknown>; reward?: number | null; done?: boolean; code?: string; message?: string };
}

/** A WebSocket client that queues what the server sends. */
export class TestClient {
  private readonly queue: Message[] = [];
  private readonly waiting: ((message: Message) => void)[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly opened: Promise<void>;

  constructor(
    url: string,
    headers: Record<string, string> = {},
    readonly ws = new WebSocket(`${url.replace(/^http/, 'ws')}/ws`, { headers }),
  ) {
    ws.on('message', (data) => {
      const message = JSON.parse(String(data)) as Message;
      const resolve = this.waiting.shift();
      if (resolve) resolve(message);
      else this.queue.push(message);
    });
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })));
    this.opened = new Promise((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    });
  }

  send(message: unknown): void {
    this.ws.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  /** The next message; rejects after `timeoutMs` (so a lost reply fails a test instead of hanging it). */
  next(timeoutMs = 60_000): Promise<Message> {
    const queued = this.queue.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(waiter), 1);
        reject(new Error(`no message from the server within ${timeoutMs} ms`));
      }, timeoutMs);
      const waiter = (message: Message) => {
        clearTimeout(timer);
        resolve(message);
      };
      this.waiting.push(waiter);
    });
  }

  async request(message: unknown): Promise<Message> {
    this.send(message);
    return this.next();
  }
}

/** Waits until `check` holds, polling every 10 ms for at most `ms`. */
export async function until(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A server for `slots` on a free loopback port; `options` override the test defaults. */
export function startLoopbackServer(slots: EnvSlots, name: string, options: Partial<EnvServerOptions> = {}): Promise<EnvServer> {
  return EnvServer.start({
    slots,
    agentFacts: (ENV_PLUGINS.find((p) => p.name === slots.envName) ?? bashPlugin).agent,
    host: '127.0.0.1',
    port: 0,
    idleTimeoutMs: 60_000,
    heartbeatMs: 5_000,
    maxMessageBytes: 1024 * 1024,
    metadata: { name, description: 'test', version: '0' },
    log: (line) => console.log(line),
    ...options,
  });
}
