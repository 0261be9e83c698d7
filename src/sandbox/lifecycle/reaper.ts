import type Docker from 'dockerode';
import { cleanup } from '../docker/cleanup.js';

/**
 * Removes the sandboxes that runs on this host left behind when they died without
 * cleaning up (SIGKILL, OOM, power loss): containers whose run label names a process of
 * this host that no longer exists. Live runs' sandboxes, and those of runs on other hosts
 * sharing the engine, are kept. Call it where a command starts envs.
 * @param options.testRun only containers of this test run (tests use it to touch nothing else).
 * @returns how many containers were removed.
 */
export async function reapCrashedRuns(docker: Docker, options: { testRun?: string } = {}): Promise<number> {
  const { containers } = await cleanup(docker, { deadRunsOnly: true, ...(options.testRun ? { testRun: options.testRun } : {}) });
  return containers;
}
