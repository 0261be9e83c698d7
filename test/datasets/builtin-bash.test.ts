/** The project's own bash dataset (datasets/bash): its format and the testbed's promises. */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadDataset } from '../../src/datasets/index.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const bashDir = join(repoRoot, 'datasets/bash');
const testbed = join(bashDir, 'testbed');

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => statSync(join(dir, name)).isFile())
    .sort();
}

describe('datasets/bash', () => {
  it('tasks.json loads: at least 32 tasks with a difficulty, unique queries, string golds', async () => {
    const tasks = await loadDataset(join(bashDir, 'tasks.json'));
    expect(tasks.length).toBeGreaterThanOrEqual(32);
    for (const task of tasks) {
      expect(['easy', 'medium', 'hard']).toContain(task.metadata.difficulty);
      expect(typeof task.gold).toBe('string');
    }
    expect(new Set(tasks.map((t) => t.query)).size).toBe(tasks.length);
  });

  it('about a third of the golds change the file system', async () => {
    const tasks = await loadDataset(join(bashDir, 'tasks.json'));
    // A syntactic check; check-golds.sh verifies the changes for real in containers.
    const changing = /(^|[\s;&|])(mkdir|rm|mv|cp|chmod|gzip -dk|tar -c\w*)\b|sed -i|-delete\b|>>? *\/testbed/;
    const count = tasks.filter((t) => changing.test(String(t.gold))).length;
    expect(count).toBe(16);
    expect(count / tasks.length).toBeGreaterThanOrEqual(0.3);
  });

  it('the testbed has the promised kinds of files', () => {
    const files = filesUnder(testbed);
    expect(files.length).toBeGreaterThanOrEqual(40);
    expect(files.length).toBeLessThanOrEqual(80);
    expect(files.filter((f) => f.includes(' ')).length).toBeGreaterThan(0);
    expect(files).toContain('.env');
    expect(files).toContain('tmp/.keep');
    expect(files.filter((f) => statSync(join(testbed, f)).size === 0).length).toBeGreaterThan(2);
    expect(readFileSync(join(testbed, 'configs/sensors.ini'), 'latin1')).toContain('\r\n');
  });

  it('keeps the executable bit on scripts (lint.sh deliberately without it)', () => {
    const executable = (f: string) => (statSync(join(testbed, f)).mode & 0o100) !== 0;
    expect(executable('scripts/deploy.sh')).toBe(true);
    expect(executable('src/main.py')).toBe(true);
    expect(executable('scripts/lint.sh')).toBe(false);
  });
});
