import { constants } from 'node:os';
import { liveSandboxes, type SandboxRegistry } from './registry.js';

export interface ShutdownOptions {
  /** Whose sandboxes to remove. Default: {@link liveSandboxes}. */
  registry: SandboxRegistry;
  /** How long removal may take before the process exits anyway. Default 15 s. */
  timeoutMs: number;
  /** Where progress goes. Default: stderr. */
  log: (line: string) => void;
  /** Ends the process. Default: `process.exit`. */
  exit: (code: number) => void;
}

const SIGNALS = ['SIGINT', 'SIGTERM'] as const;

let installed: (() => void) | undefined;
let underWay: Promise<void> | undefined;

/**
 * The shutdown a signal started (removing sandboxes, then exiting), or undefined. Error
 * paths that would end the process — episodes fail as their sandboxes are removed — await
 * it instead, so the removal is not cut short.
 */
let windDown: (() => void) | undefined;

/**
 * While registered, the first SIGINT/SIGTERM calls `stop` instead of removing sandboxes:
 * the command winds down by itself (e.g. eval lets the episodes in flight finish, so none
 * is cut short and a resumed run replays nothing twice). The next signal removes every
 * sandbox and exits, as without it.
 * @returns a function that unregisters `stop`.
 */
export function windDownOnSignal(stop: () => void): () => void {
  windDown = stop;
  return () => {
    if (windDown === stop) windDown = undefined;
  };
}

export function shutdownUnderWay(): Promise<void> | undefined {
  return underWay;
}

/**
 * Makes Ctrl-C (SIGINT) and SIGTERM remove every live sandbox before the process exits:
 * the first signal drains the registry (sandboxes created meanwhile, by a pool refilling,
 * are removed as they appear), waits at most `timeoutMs`, then exits with 128 + the
 * signal's number (130, 143), as a shell reports a process killed by it. A second signal
 * exits at once, leaving what is not yet removed to `intercode cleanup --dead-only` or the
 * next start's {@link reapCrashedRuns}. A process that ends without a signal removes what is
 * still tracked before it exits. Installing twice keeps the first installation.
 * @returns a function that removes the handlers.
 */
export function installShutdownHandlers(options: Partial<ShutdownOptions> = {}): () => void {
  if (installed) return installed;
  const registry = options.registry ?? liveSandboxes;
  const timeoutMs = options.timeoutMs ?? 15_000;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let stopping = false;

  const onSignal = (signal: NodeJS.Signals) => {
    const code = 128 + constants.signals[signal];
    if (stopping) {
      const { left, creating, removing } = registry.onExitNow();
      const stay = `${left === 0 ? 'no sandbox' : `${left} sandbox(es)`} left${creating ? ` and up to ${creating} more whose creation was under way` : ''}`;
      const cleanup = left + creating > 0 ? ' (`intercode cleanup --dead-only` removes them)' : '';
      log(`intercode: ${signal} again; exiting now with ${stay}${cleanup}${removing ? `; the engine finishes the ${removing} removal(s) already asked` : ''}`);
      exit(code);
      return;
    }
    if (windDown) {
      const stop = windDown;
      windDown = undefined;
      log(`intercode: ${signal}; winding down (press Ctrl-C again to remove every sandbox and exit)`);
      stop();
      return;
    }
    stopping = true;
    const creating = registry.creating ? ` and ${registry.creating} being created` : '';
    log(`intercode: ${signal}; removing ${registry.size} sandbox(es)${creating} (press Ctrl-C again to exit at once)`);
    underWay = registry.drain(timeoutMs).then((report) => {
      const left = report.failed + report.pending;
      log(`intercode: removed ${report.destroyed} sandbox(es)${left ? `; ${left} could not be removed (\`intercode cleanup --dead-only\` removes them)` : ''}`);
      exit(code);
    });
  };

  // A command that ends without a signal has closed its envs; what is still tracked then (the
  // pool containers of episode roots, which serve every env of a spec) is removed before the
  // process exits, once, rather than left to the engine once the process is gone.
  let drainedAtExit = false;
  const onBeforeExit = () => {
    if (drainedAtExit || stopping || registry.size === 0) return;
    drainedAtExit = true;
    void registry.drain(timeoutMs);
  };
  for (const signal of SIGNALS) process.on(signal, onSignal);
  process.on('beforeExit', onBeforeExit);
  const uninstall = () => {
    for (const signal of SIGNALS) process.off(signal, onSignal);
    process.off('beforeExit', onBeforeExit);
    installed = undefined;
    underWay = undefined;
  };
  installed = uninstall;
  return uninstall;
}
