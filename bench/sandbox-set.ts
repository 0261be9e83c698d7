import { SandboxError } from '../src/errors.js';
import type { Sandbox, SandboxRuntime, SandboxSpec } from '../src/sandbox/types.js';

/** An error's message and, when there is one, its cause's. */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.cause instanceof Error ? `${error.message}: ${error.cause.message}` : error.message;
}

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
const SIGNAL_NUMBERS: Record<(typeof SIGNALS)[number], number> = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 };

/** What {@link SandboxSet.destroyAll} did. */
export interface RemovalReport {
  removed: number;
  failed: number;
  /** Why each failed removal failed. */
  errors: unknown[];
}

/**
 * Every sandbox a bench created, removed together by {@link destroyAll} — from a
 * `finally`, and from the signal handlers {@link removeOnSignals} installs, so Ctrl-C
 * or SIGTERM never leaves containers behind. A creation still in flight when the set
 * closes is awaited and its sandbox removed too.
 */
export class SandboxSet {
  private readonly live = new Set<Sandbox>();
  private readonly creating = new Set<Promise<Sandbox>>();
  private closing: Promise<RemovalReport> | undefined;
  private signalled: NodeJS.Signals | undefined;

  constructor(
    private readonly runtime: SandboxRuntime,
    private readonly spec: SandboxSpec,
  ) {}

  get size(): number {
    return this.live.size;
  }

  /** The signal that interrupted the run, if any. */
  get interruptedBy(): NodeJS.Signals | undefined {
    return this.signalled;
  }

  /**
   * Creates a sandbox from the set's spec and keeps it for {@link destroyAll}.
   * @throws what the runtime throws; SandboxError SANDBOX_UNAVAILABLE once the set is closing.
   */
  async create(): Promise<Sandbox> {
    if (this.closing) throw new SandboxError('SANDBOX_UNAVAILABLE', 'The bench is shutting down');
    const creation = this.runtime.create(this.spec);
    this.creating.add(creation);
    // Registered before destroyAll can wait on it, so the sandbox is in `live` by then.
    creation.then((sandbox) => this.live.add(sandbox), () => undefined);
    try {
      const sandbox = await creation;
      if (this.closing) throw new SandboxError('SANDBOX_UNAVAILABLE', 'The bench is shutting down');
      return sandbox;
    } finally {
      this.creating.delete(creation);
    }
  }

  /**
   * Removes every sandbox, waiting for creations in flight first. Idempotent: later calls
   * return the first call's promise. Never throws; reports the removals that failed.
   */
  destroyAll(): Promise<RemovalReport> {
    this.closing ??= (async () => {
      await Promise.allSettled([...this.creating]);
      const results = await Promise.allSettled([...this.live].map((sandbox) => sandbox.destroy()));
      this.live.clear();
      const errors = results.flatMap((result) => (result.status === 'rejected' ? [result.reason as unknown] : []));
      return { removed: results.length - errors.length, failed: errors.length, errors };
    })();
    return this.closing;
  }

  /**
   * Installs SIGINT/SIGTERM/SIGHUP handlers that remove every sandbox, then exit with
   * 128 + the signal number. A second signal exits at once, naming the cleanup command.
   * @returns a function that uninstalls the handlers.
   */
  removeOnSignals(log: (line: string) => void): () => void {
    const handler = (signal: NodeJS.Signals) => {
      const code = 128 + (SIGNAL_NUMBERS[signal as (typeof SIGNALS)[number]] ?? 0);
      if (this.signalled) {
        log(`${signal} again: exiting now; remove what is left with \`intercode cleanup\``);
        process.exit(code);
      }
      this.signalled = signal;
      log(`${signal}: removing ${this.live.size + this.creating.size} sandbox(es)…`);
      void this.destroyAll().then(({ failed, errors }) => {
        if (failed > 0) log(`${failed} sandbox(es) could not be removed (${describeError(errors[0])}); run \`intercode cleanup\``);
        process.exit(code);
      });
    };
    for (const signal of SIGNALS) process.on(signal, handler);
    return () => {
      for (const signal of SIGNALS) process.off(signal, handler);
    };
  }
}
