/** `intercode bench` runs the benches of `npm run bench` (one implementation, two entry points). */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const cli = (args: string[]) => spawnSync(process.execPath, [join(ROOT, 'bin/intercode.js'), 'bench', ...args], { encoding: 'utf8', timeout: 120_000 });
const npmBench = (args: string[]) => spawnSync(process.execPath, [join(ROOT, 'bin/bench.js'), ...args], { encoding: 'utf8', timeout: 120_000 });

describe('intercode bench', () => {
  it('runs a bench with its own options and prints its JSON', () => {
    const run = cli(['buffer', '--transitions', '2000', '--batch', '100', '--json']);
    expect(run.status, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as Record<string, number>;
    expect(result).toMatchObject({ transitions: 2000, batch: 100 });
    expect(Object.keys(result).sort()).toEqual(Object.keys(JSON.parse(npmBench(['buffer', '--transitions', '200', '--json']).stdout) as object).sort());
  });

  it('lists the benches like npm run bench, and a bench\'s --help is its own', () => {
    const list = cli(['--help']);
    expect(list.status).toBe(0);
    expect(list.stdout).toBe(npmBench(['--help']).stdout);
    for (const name of ['step', 'vec', 'chaos', 'sql', 'buffer']) expect(list.stdout).toMatch(new RegExp(`^ {2}${name} `, 'm'));
    expect(cli(['vec', '--help']).stdout).toBe(npmBench(['vec', '--help']).stdout);
  });

  it('an unknown bench or option exits 2 with the reason', () => {
    const unknown = cli(['nope']);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/^bench: unknown bench "nope"/);
    const badOption = cli(['buffer', '--frobnicate']);
    expect(badOption.status).toBe(2);
    expect(badOption.stderr).toContain('--frobnicate is not an option of the buffer bench');
  });
});
