/** The SQL env's MariaDB image for tests: built once, without the test label, as the other images are. */
import { builtinDump, ensureSqlImage } from '../../envs/sql/index.js';
import { EngineSet } from '../../src/sandbox/backends/engine-set.js';

/** Runs `work` with the test label off (images are built unlabelled: see buildImageUnlabelled in docker.ts), then puts `testRun`'s back. */
export async function unlabelled<T>(testRun: string, work: () => Promise<T>): Promise<T> {
  delete process.env.INTERCODE_TEST_RUN;
  try {
    return await work();
  } finally {
    process.env.INTERCODE_TEST_RUN = testRun;
  }
}

/** Builds (or finds) the image of the built-in database on the local engine. */
export function builtinSqlImage(testRun: string): Promise<string> {
  return unlabelled(testRun, async () => ensureSqlImage(EngineSet.local(), [await builtinDump()], (line) => console.log(`[image] ${line}`)));
}
