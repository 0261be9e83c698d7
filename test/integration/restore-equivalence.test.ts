/**
 * Restored ≡ new, in a real engine (issue 25): after a previous episode drawn from the same
 * dataset (a gold, and hostile ones: directories filled and emptied, `touch -a`, `cat` of
 * every file, mass creation and deletion, the root folder's mode, owner and size), a sandbox
 * the in-place restore calls clean must answer the observer commands byte for byte as a new
 * sandbox of the image does:
 * `find / -xdev -printf '%p %y %s %b %n %m %u %g %A@ %T@ %C@ %i'` (minus /proc and /sys), `du -ax /`
 * and `ls -lsaR --time-style=full-iso` of the testbed and /tmp. Where it cannot be made so,
 * the restore must say it is not clean (the pool then replaces the sandbox).
 *
 * Lines of what the engine makes per sandbox differ between two new sandboxes too (their
 * creation times): their times, inode numbers and link counts are left out, and that set is
 * pinned ({@link PER_SANDBOX}); their type, size, blocks, mode and owner are compared (an
 * agent's `chmod 700 /` is seen).
 *
 * CI plays 20 of the built-in tasks' golds as previous episodes and, where
 * ../shared/intercode-data exists, 12 of NL2Bash fs-3's; `RESTORE_SWEEP=all` plays every gold
 * of the built-in tasks and of the five NL2Bash files (see docs/fidelity.md for its figures).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBashEnvs } from '../../envs/bash/index.js';
import type { BashEnv } from '../../envs/bash/bash-env.js';
import { InPlaceRestorer } from '../../src/pool/in-place-restore.js';
import type { Workspace, WorkspaceFactory } from '../../src/pool/types.js';
import { dockerTestFile, gvisorGap, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { HOSTILE_EPISODES, NL2BASH, compareObservations, observe, previousEpisodes, sharedNl2Bash } from '../setup/restore-observer.js';

const { engine } = await dockerTestFile();

const nl2bash = sharedNl2Bash();
/** `RESTORE_SWEEP=all`: every gold of every file as a previous episode (minutes per file); else the CI subset. */
const SWEEP = process.env.RESTORE_SWEEP === 'all';
const DATASETS = [
  { name: 'built-in tasks', options: {}, sample: SWEEP ? Infinity : 20 },
  ...(nl2bash
    ? NL2BASH.filter(([data]) => SWEEP || data === 'nl2bash_fs_3.json').map(([data, testbed]) => ({
        name: `NL2Bash ${data}${SWEEP ? '' : ' (sample)'}`,
        options: { data: nl2bash.data(data), testbed: testbed === 'none' ? 'none' : nl2bash.testbed(testbed) },
        sample: SWEEP ? Infinity : 12,
      }))
    : []),
];

const skip = skipWithoutEngine(engine, 'restore equivalence') || gvisorGap('the in-place restore is not supported under runsc: pooled envs replace used sandboxes there');

for (const dataset of DATASETS) describe.skipIf(skip)(`a restored sandbox answers as a new one: ${dataset.name}`, () => {
  let env: BashEnv;
  let factory: WorkspaceFactory;
  let restorer: InPlaceRestorer;
  let reference: string;
  beforeAll(async () => {
    requireEngine(engine);
    [env] = (await createBashEnvs({ ...dataset.options, goldCache: false }, 1)) as [BashEnv];
    factory = env.workspaceFactory();
    restorer = new InPlaceRestorer(factory);
    const [a, b] = await Promise.all([factory.create(), factory.create()]);
    try {
      const [seenA, seenB] = [await observe(a), await observe(b)];
      // Two new sandboxes agree but for what the engine makes per sandbox.
      expect(compareObservations(seenA, seenB)).toEqual([]);
      reference = seenA;
    } finally {
      await Promise.all([factory.destroy(a), factory.destroy(b)]);
    }
  }, 600_000);
  afterAll(async () => {
    await restorer?.close();
    await env?.close();
  });

  const episodes = () => previousEpisodes(env.tasks, dataset.sample);

  it('after every previous episode: restored in place only when it then answers every observer as a new sandbox does', async () => {
    const restoredInPlace: string[] = [];
    const mismatches: { episode: string; differences: string[] }[] = [];
    const played = [...HOSTILE_EPISODES, ...episodes()];
    for (const episode of played) {
      const used: Workspace = await factory.create();
      try {
        await used.runner.run(episode, { timeoutMs: 60_000 }).catch(() => undefined);
        if (!(await restorer.restore(used))) continue;
        restoredInPlace.push(episode);
        const differences = compareObservations(reference, await observe(used));
        if (differences.length > 0) mismatches.push({ episode, differences: differences.slice(0, 8) });
      } finally {
        await factory.destroy(used);
      }
    }
    console.log(`${dataset.name}: ${played.length} previous episodes, ${restoredInPlace.length} restored in place (each then observed as a new sandbox), ${played.length - restoredInPlace.length} refused (the pool replaces those), ${mismatches.length} restored but different`);
    expect(mismatches).toEqual([]);
    // The in-place path is exercised: an episode that only reads is restored in place.
    expect(restoredInPlace.length).toBeGreaterThan(0);
  }, 1_800_000);
});
