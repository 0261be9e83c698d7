/**
 * The tests are typed code too: `tsc -p tsconfig.tests.json` (the project's compiler options
 * over src, envs, training, bench and test) finds no error. The build checks only what it
 * emits; without this, a fake that misses a member of the interface it stands in for, or a
 * test that reads a field renamed in src, passes silently.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-path.js';

describe('the tests', () => {
  it('typecheck with the project\'s compiler options', () => {
    const run = spawnSync(process.execPath, [packagePath('node_modules', 'typescript', 'bin', 'tsc'), '-p', packagePath('tsconfig.tests.json')], { cwd: packagePath(), encoding: 'utf8', timeout: 300_000 });
    const errors = run.stdout.split('\n').filter((line) => line.includes('error TS'));
    expect(errors).toEqual([]);
    expect(run.status, run.stderr).toBe(0);
  }, 300_000);
});
