/**
 * Where the commands tests run put their default run folders (`runs/<command>-<time>/`):
 * a folder of this test run under the system's temporary folder (vitest.config.ts points
 * INTERCODE_RUNS_DIR at it), never the checkout; removed when the run ends. The teardown
 * also removes the episode-root pool folders that test workers, gone by then, left behind.
 */
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The folder, by the id of the vitest process (parallel test runs on one machine each have their own). */
export const TEST_RUNS_ROOT = join(tmpdir(), `intercode-test-runs-${process.pid}`);

/** vitest's global set-up: returns the teardown that removes the folder and orphaned pool folders. */
export default function setup(): () => Promise<void> {
  return async () => {
    rmSync(TEST_RUNS_ROOT, { recursive: true, force: true });
    const { default: Docker } = await import('dockerode');
    const { removeOrphanPoolFolders } = await import('../../src/sandbox/roots/root-pool.js');
    await removeOrphanPoolFolders(new Docker()).catch(() => 0); // no engine: no pools were made
  };
}
