/** `intercode bench` runs the benches of `npm run bench` (one implementation, two entry points). */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { benchEntry } from '../../src/cli/bench-command.js';

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

  it('the benches are not shipped: an installed package (no bench/, no dist/bench) says to run them from a checkout; a checkout not built says to build', () => {
    const dir = mkdtempSync(join(tmpdir(), 'intercode-bench-entry-'));
    try {
      expect(() => benchEntry(dir)).toThrow(/not part of the installed package: run them from a checkout/);
      mkdirSync(join(dir, 'bench'));
      writeFileSync(join(dir, 'bench', 'index.ts'), '');
      expect(() => benchEntry(dir)).toThrow(/dist\/bench\/index\.js is missing: run `npm run build`/);
      mkdirSync(join(dir, 'dist', 'bench'), { recursive: true });
      writeFileSync(join(dir, 'dist', 'bench', 'index.js'), '');
      expect(benchEntry(dir)).toBe(join(dir, 'dist', 'bench', 'index.js'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the package's file list holds no bench", () => {
    const pack = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
    expect(pack.status, pack.stderr).toBe(0);
    const files = (JSON.parse(pack.stdout) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
    expect(files.filter((path) => path.startsWith('dist/src/'))).not.toEqual([]);
    expect(files.filter((path) => path.startsWith('dist/bench/') || path.startsWith('bench/'))).toEqual([]);
  }, 120_000);
});
