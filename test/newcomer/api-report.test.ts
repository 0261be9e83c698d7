/**
 * The public API's report is current (api/*.api.md, API Extractor over dist/'s declarations):
 * a change of what a subpath of package.json "exports" offers fails here until its report is
 * written again and committed, so the change is seen in review. Reads the compiled output:
 * CI builds it (npm ci); outside CI the check is skipped without it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-path.js';

const built = existsSync(packagePath('dist', 'src', 'index.d.ts'));

describe.skipIf(!built && !process.env.CI)('the API report', () => {
  it('matches what the build declares, for every subpath of "exports"', () => {
    const run = spawnSync(process.execPath, [packagePath('api', 'report.mjs'), '--check', '--json'], { cwd: packagePath(), encoding: 'utf8', timeout: 120_000 });
    const report = JSON.parse(run.stdout) as { subpaths: Record<string, { names: number; values: number }>; total: { names: number; values: number; distinctNames: number }; changed: string[]; errors: string[] };
    expect(report.errors).toEqual([]);
    expect(report.changed, run.stderr).toEqual([]);
    expect(run.status).toBe(0);
    expect(Object.keys(report.subpaths)).toContain('./sandbox');
    expect(report.total.names).toBeGreaterThan(100);
  }, 120_000);

  // The surface stays what a user imports (docs/architecture.md "The public API"): each name
  // in one subpath only, at most 250 names counting types and 150 runtime values in all.
  it('stays within its budget, no name exported by two subpaths', () => {
    const run = spawnSync(process.execPath, [packagePath('api', 'report.mjs'), '--json'], { cwd: packagePath(), encoding: 'utf8', timeout: 120_000 });
    const { total } = JSON.parse(run.stdout) as { total: { names: number; values: number; distinctNames: number } };
    expect(total.names).toBeLessThanOrEqual(250);
    expect(total.values).toBeLessThanOrEqual(150);
    expect(total.distinctNames).toBe(total.names);
  }, 120_000);
});
