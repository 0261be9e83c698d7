import { ConfigError } from '../src/errors.js';
import { parseBenchArgs, positiveNumber } from './bench-args.js';

/** The serve bench's settings, resolved. */
export interface ServeBenchOptions {
  /** Concurrent sessions (in-process: envs of one VecEnv; server: WebSocket clients), one row each. */
  sessions: number[];
  /** Measured seconds per phase, mode and session count. */
  durationSec: number;
  json: boolean;
}

export const DEFAULT_SERVE_OPTIONS: ServeBenchOptions = { sessions: [1, 16, 64], durationSec: 5, json: false };

export const SERVE_USAGE = `Usage: npm run bench -- serve [options]

The cost of the environment server: the same workload on bash envs over a warm pool
(restored in place, built-in tasks), in one run, two ways:
  - in-process: N envs as one VecEnv, every env in a closed loop (send/recv);
  - server: \`intercode serve\`'s server (in this process, on 127.0.0.1) and N WebSocket
    clients in a worker thread, each one session in a closed loop (send, wait for the reply).
Phases, each with a 1 s warm-up not counted:
  - trivial steps: \`echo hi\` -> steps/s, step latency p50/p99 (send to reply);
  - gold episodes: reset + the task's gold + submit (gold outcomes cached) -> episodes/s;
    episodes below reward 1 are counted (should be 0).
Ratios per N: throughputRatio = server / in-process gold episodes/s;
latencyOverheadMsP50 = server - in-process trivial step p50 (what the protocol adds).
Every sandbox is removed at the end, on errors and on Ctrl-C / SIGTERM.

Options:
  --sessions LIST  concurrent sessions (default ${DEFAULT_SERVE_OPTIONS.sessions.join(',')})
  --duration SEC   measured seconds per phase (default ${DEFAULT_SERVE_OPTIONS.durationSec})
  --json           print only one JSON object on stdout:
                   {"sessions":[N...],"inProcess":[row...],"server":[row...],
                    "throughputRatio":[...],"latencyOverheadMsP50":[...]}, arrays in
                   --sessions order; a row is {"sessions","trivialStepsPerSec","stepP50Ms",
                   "stepP99Ms","goldEpisodesPerSec","goldBelowOne"}
  -h, --help       show this help
`;

/**
 * Parses the serve bench's arguments.
 * @returns the options, or "help".
 * @throws ConfigError naming the bad option.
 */
export function parseServeOptions(args: readonly string[]): ServeBenchOptions | 'help' {
  const values = parseBenchArgs('serve', args, { sessions: { type: 'string' }, duration: { type: 'string' } });
  if (values === 'help') return 'help';
  let sessions = DEFAULT_SERVE_OPTIONS.sessions;
  if (typeof values.sessions === 'string') {
    const parts = values.sessions.split(',').map((part) => Number(part.trim()));
    if (values.sessions.trim() === '' || parts.some((n) => !Number.isInteger(n) || n < 1 || n > 256)) {
      throw new ConfigError('--sessions', `must be a comma-separated list of integers 1–256 (got "${values.sessions}")`);
    }
    sessions = [...new Set(parts)];
  }
  return { sessions, durationSec: positiveNumber('--duration', values.duration, DEFAULT_SERVE_OPTIONS.durationSec, false), json: values.json === true };
}
