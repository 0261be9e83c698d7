import type { Writable } from 'node:stream';

/** Where a bench writes: results on `stdout`, progress and errors on `stderr`. */
export interface BenchIO {
  stdout: Writable;
  stderr: Writable;
}

/** One benchmark, run by name from `npm run bench -- <name> [options]`. */
export interface Bench {
  /** The name on the command line, e.g. "step". */
  readonly name: string;
  /** One line for the list of benches. */
  readonly summary: string;
  /**
   * Runs the bench with the arguments that follow its name.
   * @returns the process exit code: 0 done, 1 failed, 2 bad usage.
   */
  run(args: readonly string[], io: BenchIO): Promise<number>;
}
