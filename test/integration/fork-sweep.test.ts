/**
 * Forks exact after every gold (issue 29's exactness figure), in a real engine: each gold is
 * played as an episode, the episode is forked into two children, and the parent and each
 * child print the same observer set (test/setup/fork-observer.ts: the restore-equivalence
 * observers, with what a copy cannot keep cut); a write in one child is seen neither in the
 * other nor in the parent. A state the checkpoint cannot carry must be a typed refusal
 * (`CHECKPOINT_REFUSED`), never a child that differs.
 *
 * Each sweep must fork at least a stated number of its episodes (a checkpoint that refuses
 * everything compares nothing), and once per sweep a child with one file changed must be
 * flagged (the negative control). CI plays 3 hostile episodes, 5 of the built-in tasks'
 * golds and 4 of NL2Bash fs-3's (without ../shared/intercode-data, those are counted as
 * skipped, saying so); `FORK_SWEEP=all` plays every gold of
 * the built-in tasks and of InterCode's five NL2Bash files (figures: docs/fork.md).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBashEnvs } from '../../envs/bash/index.js';
import type { BashEnv } from '../../envs/bash/bash-env.js';
import { goldText } from '../../src/datasets/index.js';
import { CheckpointError } from '../../src/errors.js';
import { dockerTestFile, gvisorGap, requireEngine, skipWithoutEngine, testEngines } from '../setup/docker.js';
import { CONTROL_CHANGE, comparable, differences, differencesAfterControlChange, observeEnv as observe } from '../setup/fork-observer.js';
import { HOSTILE_EPISODES, nl2bashDatasets } from '../setup/restore-observer.js';
import { sharedPool, type SharedPool } from '../../src/vec/make-vec-env.js';

const { engine } = await dockerTestFile();
const skip = skipWithoutEngine(engine, 'fork sweep') || gvisorGap('checkpoints read the writable layer on the host: overlay2 and runc only');

const SWEEP = process.env.FORK_SWEEP === 'all';
/**
 * `minForked`: the fewest episodes the sweep must see forked (and so compared); a checkpoint
 * that refuses more than it does now compares too little to prove anything. On this build
 * none of the CI sample is refused (built-in 8 of 8, NL2Bash fs-3 sample 4 of 4).
 */
const DATASETS = [
  { name: 'built-in tasks', options: {}, sample: SWEEP ? Infinity : 5, hostile: true, minForked: SWEEP ? 40 : 7, missing: undefined as string | undefined },
  ...nl2bashDatasets(SWEEP).map(({ file, options, missing }) => ({
    name: `NL2Bash ${file}${SWEEP ? '' : ' (sample)'}`,
    options,
    sample: SWEEP ? Infinity : 4,
    hostile: false,
    minForked: SWEEP ? 20 : 4,
    missing,
  })),
];

/** Task indices: all, or `sample` of them spread evenly. */
function sampled(count: number, sample: number): number[] {
  if (count <= sample) return Array.from({ length: count }, (_, i) => i);
  return Array.from({ length: sample }, (_, i) => Math.floor((i * count) / sample));
}

/** Children made as new sandboxes from the layer, or laid over a warm pool's spares in place (docs/fork.md). */
const MODES = [
  { name: 'new sandboxes', pooled: false },
  { name: 'in place', pooled: true },
] as const;

/** One engine set for the file: on episode roots, one pool container serves every env's roots. */
const engines = testEngines();

for (const dataset of DATASETS) if (dataset.missing) console.warn(`skipping the fork sweep on ${dataset.name}: ${dataset.missing}`);

for (const mode of MODES) for (const dataset of DATASETS) describe.skipIf(skip || dataset.missing !== undefined)(`every child of a fork answers as its parent (${mode.name}): ${dataset.name}${dataset.missing ? ` (skipped: ${dataset.missing})` : ''}`, () => {
  let env: BashEnv;
  let shared: SharedPool | undefined;
  beforeAll(async () => {
    requireEngine(engine);
    [env] = (await createBashEnvs({ ...dataset.options, goldCache: false, engines }, 1)) as [BashEnv];
    if (mode.pooled) shared = sharedPool([env], { pool: { minIdle: 2 } });
  }, 600_000);
  afterAll(async () => {
    await env?.close();
    await shared?.pool.close();
    await shared?.restorer?.close();
  });

  it('after each gold (and hostile episode): two children print the parent\'s observers, and a write in one is seen nowhere else', async () => {
    const episodes = [
      ...(dataset.hostile ? HOSTILE_EPISODES.slice(0, 3).map((action) => ({ name: action.slice(0, 60), task: 0, action })) : []),
      ...sampled(env.tasks.length, dataset.sample).map((task) => ({ name: `task ${task}`, task, action: goldText(env.tasks[task]!) })),
    ];
    const forked: string[] = [];
    const refused: string[] = [];
    const notInPlace: string[] = [];
    const cutOff: string[] = [];
    const mismatches: { episode: string; differences: string[] }[] = [];
    for (const episode of episodes) {
      await env.reset({ task: episode.task });
      const ran = await env.step(episode.action);
      expect(ran.truncated, `${episode.name}: ${ran.observation.slice(0, 200)}`).toBe(false);
      // One cut off by its time limit left less than it meant to: still forked and compared, and named.
      if (ran.info.events.some((e) => e.kind === 'timed-out')) cutOff.push(episode.name);
      let children: BashEnv[];
      await shared?.pool.ready(2);
      try {
        children = (await env.fork(2)) as BashEnv[];
      } catch (error) {
        // Exact or a typed refusal: anything else fails the test.
        expect(error, episode.name).toBeInstanceOf(CheckpointError);
        expect((error as CheckpointError).code, episode.name).toBe('CHECKPOINT_REFUSED');
        refused.push(`${episode.name}: ${String((error as CheckpointError).details.reason)}`);
        continue;
      }
      try {
        forked.push(episode.name);
        // In place: both children took a spare (the parent holds one); a layer that cannot be laid in place (a file moved, say) gets new sandboxes.
        if (shared && shared.pool.stats().lent !== 3) notInPlace.push(episode.name);
        // Each side observed once (an observation is a read that moves atimes: docs/fork.md).
        const parentSeen = comparable(await observe(env));
        for (const [i, child] of children.entries()) {
          const seen = differences(parentSeen, comparable(await observe(child)));
          if (seen.length > 0) mismatches.push({ episode: `${episode.name}, child ${i}`, differences: seen.slice(0, 8) });
        }
        // Negative control, once per sweep: a child with one file's mtime changed is told apart (the file's line, whatever else its copy-up shows).
        if (forked.length === 1) {
          const flagged = await differencesAfterControlChange(parentSeen, children[1]!);
          if (!flagged.some((line) => line.startsWith(`- find\t${CONTROL_CHANGE.path}\t`))) mismatches.push({ episode: `${episode.name}: negative control (${CONTROL_CHANGE.path} changed in child 1)`, differences: flagged.length ? flagged.slice(0, 8) : ['not flagged'] });
        }
        await children[0]!.step('echo mine > /tmp/only-in-child-0');
        for (const other of [env, children[1]!]) {
          const look = await other.step('ls /tmp/only-in-child-0 2>&1; true');
          if (!/No such file/.test(look.observation)) mismatches.push({ episode: `${episode.name}: independence`, differences: [look.observation] });
        }
      } finally {
        await Promise.all(children.map((child) => child.close()));
      }
    }
    console.log(`${dataset.name} (${mode.name}): ${episodes.length} episodes, ${forked.length} forked (each child observed as the parent; at least ${dataset.minForked} expected${shared ? `; ${forked.length - notInPlace.length} laid in place` : ''}), ${refused.length} refused with a typed error${refused.length ? ` (${refused.join('; ')})` : ''}, ${mismatches.length} children different${cutOff.length ? `; cut off by the time limit: ${cutOff.join(', ')}` : ''}${notInPlace.length ? `; not in place: ${notInPlace.join(', ')}` : ''}`);
    expect(mismatches).toEqual([]);
    // A layer laid in place only where it can be exactly (docs/fork.md): most episodes' can.
    if (shared) expect(forked.length - notInPlace.length).toBeGreaterThan(forked.length / 2);
    expect(forked.length, `episodes forked (and so compared); refused: ${refused.join('; ')}`).toBeGreaterThanOrEqual(dataset.minForked);
  }, SWEEP ? 7_200_000 : 1_200_000);
});
