/**
 * `intercode run` checks golds, so a wrong pairing of task file and env is never a quiet
 * figure: fewer than half of the scored golds scoring 1 ends with one line naming the likely
 * mismatch, exit 1; `--allow-failing-golds` keeps the figures with exit 0. And its listing
 * stays one line per task when a query spans lines (a Harbor instruction is a Markdown
 * file). All on the SQL env's embedded backend: no Docker.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkGolds, likelyMismatch } from '../../src/cli/gold-check.js';
import { queryLine } from '../../src/cli/run-command.js';
import { GoldsFailingError } from '../../src/errors.js';
import { ENV_PLUGINS } from '../../envs/index.js';
import { intercodeFromSource } from '../setup/cli.js';
import { tempDir } from '../setup/temp-dirs.js';

const dir = tempDir('ic-run-golds-');

describe('run: the gold check', () => {
  it("another env's task file: the figures, then one line naming the mismatch, exit 1", async () => {
    const run = await intercodeFromSource(['run', 'sql', '--embedded', '--data', 'datasets/bash/tasks.json']);
    expect(run.stdout).toContain('45 episodes, 0 scored 1.0 (0.0 %)');
    const last = run.stderr.trim().split('\n').at(-1)!;
    expect(last).toBe(
      'intercode: only 0 of 45 golds scored 1 (run checks golds: at least half should); likely cause: datasets/bash/tasks.json holds bash tasks, not sql tasks: ' +
        '`intercode run bash --data datasets/bash/tasks.json` checks them; --allow-failing-golds measures without this check (exit 0)',
    );
    expect(run.code).toBe(1);
  }, 120_000);

  it('--allow-failing-golds: the same figures, exit 0 (deliberate measurement); --json too', async () => {
    const run = await intercodeFromSource(['run', 'sql', '--embedded', '--data', 'datasets/bash/tasks.json', '--allow-failing-golds', '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ episodes: 45, solved: 0 });
  }, 120_000);

  it('checkGolds: at least half of the scored solves passes; none scored is no evidence; the general causes for a file of no known env', () => {
    const sql = ENV_PLUGINS.find((p) => p.name === 'sql')!;
    expect(() => checkGolds(sql, ENV_PLUGINS, 'mine.json', 2, 4)).not.toThrow();
    expect(() => checkGolds(sql, ENV_PLUGINS, 'mine.json', 0, 0)).not.toThrow();
    const error = (() => {
      try {
        checkGolds(sql, ENV_PLUGINS, join(dir, 'mine.json'), 1, 3);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(GoldsFailingError);
    expect((error as GoldsFailingError).message).toContain('only 1 of 3 golds scored 1');
    expect((error as GoldsFailingError).message).toContain('likely cause: the task file may be for another env than sql, or need the settings it was made with');
    expect((error as GoldsFailingError).details).toEqual({ solved: 1, scored: 3, data: join(dir, 'mine.json'), env: 'sql' });
    expect(likelyMismatch(sql, ENV_PLUGINS, undefined)).toContain('the built-in golds of sql should all score 1');
    expect(likelyMismatch(sql, ENV_PLUGINS, 'datasets/python/tasks.json')).toContain('holds python tasks, not sql tasks');
  });

  it('a multi-line query is one line of the listing', async () => {
    const file = join(dir, 'multi-line.json');
    const query = '# Count the books\n\nHow many books does the\nlibrary hold?\n\n- answer with one number\n';
    writeFileSync(file, JSON.stringify([{ query, gold: 'SELECT count(*) FROM book', db: 'library' }, { query: 'x\ny', gold: 'SELECT 1', db: 'library' }]));
    const run = await intercodeFromSource(['run', 'sql', '--embedded', '--data', file]);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.split('\n');
    expect(lines.slice(0, 2)).toEqual([
      '#  0  reward 1.00  iou=1.00  # Count the books How many books does the library hold? - answer with…',
      '#  1  reward 1.00  iou=1.00  x y',
    ]);
    expect(lines[2]).toBe('');
    expect(lines[3]).toMatch(/^2 episodes, 2 scored 1\.0/);
  }, 120_000);

  it('queryLine: white space folded, control characters shown, long queries cut with an ellipsis', () => {
    expect(queryLine('a\n\tb\r\nc')).toBe('a b c');
    expect(queryLine('x\u001b[31my')).toBe('x\\x1b[31my');
    expect(queryLine('y'.repeat(100))).toBe(`${'y'.repeat(69)}…`);
  });
});
