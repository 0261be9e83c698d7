/**
 * One rule for "solved" (src/scoring/solved.ts): every command and report counts an episode
 * solved at reward 1 (within 1e-6 for float sums), none by a threshold of its own.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isSolved, SOLVED_REWARD } from '../../src/scoring/index.js';
import { packagePath } from '../../src/package-path.js';

const ROOT = packagePath();

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.ts$/.test(entry) ? [path] : [];
  });
}

describe('isSolved', () => {
  it('is reward 1, allowing float sums of rounded parts, and no partial credit', () => {
    expect(isSolved(1)).toBe(true);
    expect(isSolved(0.01 + 0.33 + 0.33 + 0.33)).toBe(true); // the bash reward's parts
    expect(isSolved(1 - 1e-7)).toBe(true);
    // A SQL reward is the IoU of the rows: 199 right rows of 200 is 0.995, not a solution.
    expect(isSolved(199 / 200)).toBe(false);
    expect(isSolved(0.99)).toBe(false);
    expect(SOLVED_REWARD).toBe(1 - 1e-6);
  });

  it('is the only solved threshold in src/, training/ and envs/', () => {
    const own = /(?:reward|max_reward)\s*>=?\s*(?:1\b|0\.99\d*|1\s*-\s*1e-\d)|SOLVED\s*=\s*[\d.]/;
    const found = ['src', 'training', 'envs']
      .flatMap((dir) => sourceFiles(join(ROOT, dir)))
      .filter((file) => !file.endsWith(join('scoring', 'solved.ts')))
      .flatMap((file) =>
        readFileSync(file, 'utf8')
          .split('\n')
          .flatMap((line, i) => (own.test(line) ? [`${relative(ROOT, file)}:${i + 1}: ${line.trim()}`] : [])),
      );
    expect(found).toEqual([]);
  });
});
