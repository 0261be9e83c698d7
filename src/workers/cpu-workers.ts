import { existsSync } from 'node:fs';
import { Piscina } from 'piscina';
import { ConfigError } from '../errors.js';
import { packagePath } from '../package-path.js';

/**
 * A pure, CPU-bound function that can run on a worker thread: the compiled module that
 * exports it (a path under dist/, e.g. `envs/bash/reward.js`), its export name, and the
 * function itself for running on the calling thread. Input and output must survive
 * structured cloning (plain objects, arrays, Maps, strings, numbers).
 */
export interface WorkerFunction<I, O> {
  readonly module: string;
  readonly name: string;
  readonly run: (input: I) => O;
}

/**
 * Where CPU-bound work (rewards: TF-IDF, row IoU on big results, hashing) runs: with 0
 * threads on the calling thread, otherwise on a piscina pool of that many worker threads,
 * so the event loop that drives the sandboxes is not held up. Shared by every env of a run.
 */
export class CpuWorkers {
  private readonly pool: Piscina | undefined;
  private readonly checked = new Map<string, string>();

  /** @throws ConfigError for a negative or fractional thread count. */
  constructor(readonly threads: number) {
    if (!Number.isInteger(threads) || threads < 0) throw new ConfigError('workers', `must be an integer ≥ 0, got ${threads}`);
    if (threads > 0) this.pool = new Piscina({ minThreads: threads, maxThreads: threads, idleTimeout: 60_000 });
  }

  /**
   * `fn(input)`, on a worker thread when there are any.
   * @throws ConfigError when the compiled module is missing (run `npm run build`).
   */
  async run<I, O>(fn: WorkerFunction<I, O>, input: I): Promise<O> {
    if (!this.pool) return fn.run(input);
    return (await this.pool.run(input, { filename: this.compiled(fn.module), name: fn.name })) as O;
  }

  /** The compiled module's path, checked once per module (not on every call). */
  private compiled(module: string): string {
    let filename = this.checked.get(module);
    if (!filename) {
      filename = packagePath('dist', module);
      if (!existsSync(filename)) throw new ConfigError('workers', `worker threads run compiled code and ${filename} is missing; run \`npm run build\``);
      this.checked.set(module, filename);
    }
    return filename;
  }

  /** Tasks the worker threads have finished (0 without threads). */
  get completedOnThreads(): number {
    return this.pool?.completed ?? 0;
  }

  /** Stops the worker threads (waits for tasks in flight). */
  async close(): Promise<void> {
    await this.pool?.close();
  }
}

/** Runs everything on the calling thread. */
export const INLINE = new CpuWorkers(0);
