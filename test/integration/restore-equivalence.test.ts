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
 * Each hostile episode must be seen to change the sandbox, every episode must run to its end,
 * and at least a stated number of episodes per dataset must be restored in place (a restore
 * that refuses everything compares nothing); a negative control changes one file's atime in
 * a restored sandbox, which the comparison must flag.
 *
 * CI plays 20 of the built-in tasks' golds as previous episodes and 12 of NL2Bash fs-3's
 * (without ../shared/intercode-data, those are counted as skipped, saying so); `RESTORE_SWEEP=all` plays every gold
 * of the built-in tasks and of the five NL2Bash files (see docs/fidelity.md for its figures).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBashEnvs } from '../../envs/bash/index.js';
import type { BashEnv } from '../../envs/bash/bash-env.js';
import { InPlaceRestorer } from '../../src/pool/reuse/in-place-restore.js';
import type { Workspace, WorkspaceFactory } from '../../src/pool/types.js';
import { dockerTestFile, gvisorGap, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { HOSTILE_EPISODES, compareObservations, nl2bashDatasets, observe, previousEpisodes } from '../setup/restore-observer.js';

const { engine } = await dockerTestFile();

/** `RESTORE_SWEEP=all`: every gold of every file as a previous episode (minutes per file); else the CI subset. */
const SWEEP = process.env.RESTORE_SWEEP === 'all';
/**
 * `minInPlace`: the fewest previous episodes the sweep must see restored in place (and so
 * compared): a restore that refuses more than it does now compares too little to prove
 * anything. Measured on this build: built-in 15 of 28, NL2Bash fs-3 sample 14 of 20 (the
 * others write files: the pool replaces those); the bounds leave a few refusals' room.
 */
const DATASETS = [
  { name: 'built-in tasks', options: {}, sample: SWEEP ? Infinity : 20, minInPlace: SWEEP ? 30 : 13, missing: undefined as string | undefined },
  ...nl2bashDatasets(SWEEP).map(({ file, options, missing }) => ({
    name: `NL2Bash ${file}${SWEEP ? '' : ' (sample)'}`,
    options,
    sample: SWEEP ? Infinity : 12,
    minInPlace: SWEEP ? 20 : 12,
    missing,
  })),
];

const skip = skipWithoutEngine(engine, 'restore equivalence') || gvisorGap('the in-place restore is not supported under runsc: pooled envs replace used sandboxes there');

/**
 * The hostile episode that reads every file and lists every folder, writing nothing: the
 * observers see no change after it (measured: the image's files keep their atimes, read
 * through overlayfs), and its restore must see none either.
 */
const READS_ONLY = HOSTILE_EPISODES[2]!;

/** The negative control's change: one file's atime, nothing else (the subtlest change the observers must see). */
const CONTROL_CHANGE = ['touch', '-a', '-d', '@1000000000', '/etc/passwd'];

for (const dataset of DATASETS) {
  if (dataset.missing) console.warn(`skipping restore equivalence on ${dataset.name}: ${dataset.missing}`);
  describe.skipIf(skip || dataset.missing !== undefined)(`a restored sandbox answers as a new one: ${dataset.name}${dataset.missing ? ` (skipped: ${dataset.missing})` : ''}`, () => {
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
      const unchanged: string[] = [];
      const failedToRun: string[] = [];
      const played = [...HOSTILE_EPISODES.map((action) => ({ action, hostile: true })), ...episodes().map((action) => ({ action, hostile: false }))];
      for (const { action: episode, hostile } of played) {
        const used: Workspace = await factory.create();
        try {
          // The episode ran to its end (a gold or hostile episode cut off by its time limit left less than it meant to).
          const ran = await used.runner.run(episode, { timeoutMs: 60_000 });
          if (ran.exitCode === null) failedToRun.push(episode);
          // Each hostile episode changed what the observers see (but the one that only reads): else its restore proves nothing.
          if (hostile && episode !== READS_ONLY && compareObservations(reference, await observe(used)).length === 0) unchanged.push(episode);
          if (!(await restorer.restore(used)).clean) continue;
          restoredInPlace.push(episode);
          const differences = compareObservations(reference, await observe(used));
          if (differences.length > 0) mismatches.push({ episode, differences: differences.slice(0, 8) });
        } finally {
          await factory.destroy(used);
        }
      }
      console.log(`${dataset.name}: ${played.length} previous episodes, ${restoredInPlace.length} restored in place (each then observed as a new sandbox; at least ${dataset.minInPlace} expected), ${played.length - restoredInPlace.length} refused (the pool replaces those), ${mismatches.length} restored but different`);
      expect(failedToRun, 'previous episodes that did not run to their end').toEqual([]);
      expect(unchanged, 'hostile episodes whose change the observers did not see').toEqual([]);
      expect(mismatches).toEqual([]);
      expect(restoredInPlace.length, 'previous episodes restored in place (and so compared)').toBeGreaterThanOrEqual(dataset.minInPlace);
    }, 1_800_000);

    it('negative control: a sandbox restored in place, then one file\'s atime changed, is told apart from a new one', async () => {
      const used: Workspace = await factory.create();
      try {
        await used.runner.run('cat /etc/passwd > /dev/null', { timeoutMs: 60_000 });
        expect(await restorer.restore(used), "a read-only episode is restored in place").toEqual({ clean: true });
        expect(compareObservations(reference, await observe(used))).toEqual([]);
        const changed = await used.sandbox.exec(CONTROL_CHANGE, { timeoutMs: 30_000 });
        expect(changed.exitCode, changed.output.toString()).toBe(0);
        const differences = compareObservations(reference, await observe(used));
        expect(differences.length, 'differences after the control change').toBeGreaterThan(0);
        // The file itself (copied up into the writable layer, /etc and the `du` totals may show too).
        expect(differences.some((line) => line.startsWith('- find\t/etc/passwd\t')), differences.join('\n')).toBe(true);
      } finally {
        await factory.destroy(used);
      }
    }, 300_000);
  });
}
