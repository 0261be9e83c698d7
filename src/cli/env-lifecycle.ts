import type { Command } from 'commander';
import { connectEngine } from '../sandbox/docker/engine.js';
import { installShutdownHandlers } from '../sandbox/lifecycle/shutdown.js';
import { reapCrashedRuns } from '../sandbox/lifecycle/reaper.js';
import { isClusterTarget, loadCluster, parseClusterTarget } from '../sandbox/kubernetes/cluster.js';
import { cleanupPods } from '../sandbox/kubernetes/pod-cleanup.js';
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
      if (isClusterTarget(endpoint)) {
        const cluster = await loadCluster(parseClusterTarget(endpoint), { retryForMs: 0 });
        const reaped = await cleanupPods(cluster, { deadRunsOnly: true }).catch(() => 0);
        if (reaped > 0) process.stderr.write(`intercode: removed ${reaped} pod(s) left by crashed runs on ${endpoint}\n`);
        continue;
      }
      const docker = await connectEngine(endpoint).catch(() => undefined);
      if (!docker) continue;
      const reaped = await reapCrashedRuns(docker);
      if (reaped > 0) process.stderr.write(`intercode: removed ${reaped} sandbox(es) left by crashed runs on ${endpoint}\n`);
    }
  });
}
