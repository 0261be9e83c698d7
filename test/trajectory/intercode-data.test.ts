/**
 * Reads every recorded evaluation file in ../shared/intercode-data/trajectories. The
 * folder is reference data that is not part of the repository: without it these are
 * counted as skipped (the per-file case once, naming the folder).
 */
import { existsSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { episodesOf, readRecordedTrajectories } from '../../src/trajectory/index.js';
import { detectComparedGoldOutput } from '../../envs/bash/compared-gold-output.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const root = resolve(repoRoot, '../shared/intercode-data/trajectories');
const present = existsSync(root);
if (!present) console.warn(`skipping recorded trajectories: ${root} does not exist`);

/**
 * The published files; without the folder, one name that says it is absent, so that the
 * per-file case is counted as skipped (an empty `it.each` would vanish from the counts).
 */
const FILES = present
  ? readdirSync(root, { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.json'))
      .sort()
  : [`each published file (${root} does not exist)`];

// The layout of each published file, as found by reading them all.
const META_LOGS = new Set([
  'bash/ic_bash_plan_solve_fs_2.json',
  'bash/ic_bash_plan_solve_fs_3.json',
  'bash/ic_bash_plan_solve_fs_4.json',
  'bash/ic_bash_plan_solve_refine_3_turns.json',
  'sql/ic_sql_plan_solve.json',
  'sql/ic_sql_plan_solve_refine_3_turns.json',
]);

describe.skipIf(!present)(`recorded InterCode trajectories (reference data${present ? '' : `: skipped, ${root} does not exist`})`, () => {
  it('finds the 20 published files', () => {
    expect(FILES).toHaveLength(20);
  });

  it.each(FILES)('%s: every episode loads', async (name) => {
    const file = join(root, name);
    const episodes = await readRecordedTrajectories(file);
    const { layout, episodes: keyed } = episodesOf(JSON.parse(await readFile(file, 'utf8')), file);
    expect(layout).toBe(META_LOGS.has(name.split('\\').join('/')) ? 'meta-logs' : 'keyed');
    expect(episodes).toHaveLength(Object.keys(keyed).length);
    expect(episodes.map((e) => String(e.taskIndex))).toEqual(Object.keys(keyed));
    for (const e of episodes) {
      expect(e.observations).toHaveLength(e.actions.length);
      expect(e.rewards).toHaveLength(e.actions.length);
      expect(e.validActions).toHaveLength(e.actions.length);
      if (e.rewards.length > 0) expect(e.maxReward).toBe(Math.max(...e.rewards));
    }
  });

  it("bash: the gold-output cut shows in the Try Again logs of fs-1 and fs-3 only (what replay's --eval-obs default reads)", async () => {
    const found: Record<string, unknown> = {};
    for (const name of FILES.filter((n) => n.startsWith('bash'))) {
      found[name] = detectComparedGoldOutput(await readRecordedTrajectories(join(root, name))).mode;
    }
    expect(Object.entries(found).filter(([, mode]) => mode === 'tail').map(([name]) => name.split('\\').join('/'))).toEqual([
      'bash/ic_bash_multiturn_gpt-3.5_10_turns_fs_1.json',
      'bash/ic_bash_multiturn_gpt-3.5_10_turns_fs_3.json',
    ]);
    expect(Object.keys(found)).toHaveLength(12);
  });
});
