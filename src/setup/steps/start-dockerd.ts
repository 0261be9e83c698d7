import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { SetupError } from '../../errors.js';
import { pingEngine } from '../host-facts.js';
import type { DockerdLayout, SetupStep, StepContext, StepOutcome } from '../step.js';

/** The flags CI and set-up start dockerd with: no bridge network, no iptables rules (sandboxes get no network anyway). */
export const DOCKERD_FLAGS = ['--bridge=none', '--iptables=false', '--ip-masq=false'] as const;

/** dockerd's arguments for a layout: the flags, plus socket, config, pidfile and roots where they differ from the system's. */
export function dockerdArgs(layout: DockerdLayout): string[] {
  const args: string[] = [...DOCKERD_FLAGS];
  if (layout.socket !== '/var/run/docker.sock') args.push(`--host=unix://${layout.socket}`);
  if (layout.configFile !== '/etc/docker/daemon.json' && existsSync(layout.configFile)) args.push(`--config-file=${layout.configFile}`);
  if (layout.pidfile !== '/var/run/docker.pid') args.push(`--pidfile=${layout.pidfile}`);
  if (layout.dataRoot) args.push(`--data-root=${layout.dataRoot}`);
  if (layout.execRoot) args.push(`--exec-root=${layout.execRoot}`);
  if (layout.storageDriver) args.push(`--storage-driver=${layout.storageDriver}`);
  return args;
}

/** The shell command that starts the engine as set-up does (for messages). */
export function dockerdCommand(layout: DockerdLayout): string {
  return `nohup dockerd ${dockerdArgs(layout).join(' ')} >${layout.logFile} 2>&1 &`;
}

/** The same for a user who is not root: the whole line under sudo, so the log's redirection has root's rights too. */
export function sudoDockerdCommand(layout: DockerdLayout): string {
  return `sudo sh -c '${dockerdCommand(layout)}'`;
}

/** The last `lines` lines of a file, or "". */
function tail(file: string, lines: number): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/**
 * Starts dockerd in the background (its own session, so it outlives `intercode setup`),
 * its output appended to the layout's log file, and waits until it answers.
 */
export function startDockerdStep(timeoutMs = 90_000): SetupStep {
  return {
    id: 'start-dockerd',
    title: 'start dockerd (no bridge network) and wait until it answers',
    async run({ layout, log }: StepContext): Promise<StepOutcome> {
      const endpoint = `unix://${layout.socket}`;
      if ((await pingEngine(endpoint, 2_000)).answers) return { status: 'skipped', detail: `an engine answers at ${endpoint} already` };
      mkdirSync(dirname(layout.logFile), { recursive: true });
      const out = openSync(layout.logFile, 'a');
      const child = spawn('dockerd', dockerdArgs(layout), { detached: true, stdio: ['ignore', out, out] });
      closeSync(out);
      let exited: number | null | undefined;
      child.once('exit', (code) => (exited = code));
      const started = await new Promise<boolean>((resolve) => {
        child.once('spawn', () => resolve(true));
        child.once('error', () => resolve(false));
      });
      if (!started) throw new SetupError('start-dockerd', 'the dockerd binary could not be started', ['apt-get install -y docker.io']);
      child.unref();
      log(`dockerd started (pid ${child.pid}), log: ${layout.logFile}`);
      const began = Date.now();
      let nextNote = began + 5_000;
      while (Date.now() - began < timeoutMs) {
        if (exited !== undefined) break;
        if ((await pingEngine(endpoint, 1_000)).answers) {
          return { status: 'done', detail: `dockerd (pid ${child.pid}) answers at ${endpoint} after ${((Date.now() - began) / 1000).toFixed(1)} s; log: ${layout.logFile}` };
        }
        if (Date.now() >= nextNote) {
          log(`waiting for dockerd to answer (${Math.round((Date.now() - began) / 1000)} s)`);
          nextNote += 5_000;
        }
        await new Promise((r) => setTimeout(r, 250));
      }
      const why = exited !== undefined ? `dockerd exited with ${exited}` : `dockerd did not answer within ${timeoutMs / 1000} s`;
      if (exited === undefined && child.pid) process.kill(child.pid, 'SIGTERM');
      throw new SetupError('start-dockerd', `${why}; the end of ${layout.logFile}: ${tail(layout.logFile, 8).replaceAll('\n', ' | ')}`, [`tail -n 50 ${layout.logFile}`]);
    },
  };
}
