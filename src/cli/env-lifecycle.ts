import type { Command } from 'commander';
import { installShutdownHandlers } from '../sandbox/lifecycle/shutdown.js';
import { backendOf } from '../sandbox/backends/backends.js';
import { engineTargets } from './engine-flag.js';

/**
 * Before any of `commands` (those that start envs) runs: removes the sandboxes crashed
 * runs of this host left on each engine it will use (`--engine`s, else the default one),
 * and installs the Ctrl-C/SIGTERM handlers that remove this run's sandboxes before it
 * exits. An engine that does not answer is passed over here; the command reports it.
 */
export function addEnvLifecycle(program: Command, commands: readonly string[]): void {
  program.hook('preAction', async (_program, action) => {
    if (!commands.includes(action.name())) return;
    installShutdownHandlers();
    for (const { endpoint } of engineTargets(action.opts())) {
      const reaped = await backendOf(endpoint).reapCrashedRuns(endpoint);
      if (reaped > 0) process.stderr.write(`intercode: removed ${reaped} sandbox(es) left by crashed runs on ${endpoint}\n`);
    }
  });
}
