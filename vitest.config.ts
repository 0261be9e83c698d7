import { defineConfig } from 'vitest/config';
import { TEST_RUNS_ROOT } from './test/setup/runs-root.js';

// Unit tests (no Docker) and integration tests (test/integration, real Docker engine)
// run in one `npm test`. Integration tests need long hook timeouts: image builds and
// container start-up happen in beforeAll.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 600_000,
    pool: 'forks',
    fileParallelism: false,
    // Commands run by tests remove their sandboxes at exit (no keep-warm): a test that keeps
    // sandboxes warm says so.
    // …and put their default run folders in a temporary folder of this test run, not in runs/.
    env: { INTERCODE_KEEP_WARM: '0', INTERCODE_RUNS_DIR: TEST_RUNS_ROOT },
    globalSetup: ['test/setup/runs-root.ts'],
  },
});
