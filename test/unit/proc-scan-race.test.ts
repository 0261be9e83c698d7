/**
 * The harness's scripts that scan /proc read files of processes that may exit meanwhile. A
 * read whose error redirect comes after its input redirect (`read x < file 2>/dev/null`)
 * prints "No such file or directory" to the shell's stderr when the file is gone: bash
 * opens the input first. In the in-place restore that message, mixed into the script's
 * answer, refused a clean sandbox (seen: "environment: line 64: /proc/100/cmdline: No such
 * file or directory"). Run in this host's bash while processes come and go, and read in the
 * sources for the pattern.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { idlePidScript } from '../../src/sandbox/shell/shell-script.js';

const ROOT = join(import.meta.dirname, '..', '..');
const BASH = '/bin/bash';

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

describe('scans of /proc while processes exit', () => {
  it.skipIf(process.platform !== 'linux')('the idle-process scan prints nothing to stderr while thousands of processes start and exit', async () => {
    const churn = spawn(BASH, ['-c', 'for k in $(seq 4000); do /bin/true & done; wait'], { stdio: 'ignore' });
    const exited = new Promise((resolve) => churn.once('exit', resolve));
    try {
      const script = `for n in $(seq 40); do\n${idlePidScript('i')}\ndone`;
      const run = spawnSync(BASH, ['-c', script], { encoding: 'utf8' });
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
    } finally {
      churn.kill();
      await exited;
    }
  });

  it('no script in src/ or envs/ reads a file with its error redirect after the input redirect', () => {
    const late = /<\s*"[^"]*"\s*2>\s*\/dev\/null/;
    const found = [...sourceFiles(join(ROOT, 'src')), ...sourceFiles(join(ROOT, 'envs'))].flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, i) => (late.test(line) ? [`${relative(ROOT, file)}:${i + 1}`] : [])),
    );
    expect(found).toEqual([]);
  });
});
