import { defineConfig } from 'vitest/config';

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
    env: { INTERCODE_KEEP_WARM: '0' },
  },
});
