import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../setup/temp-dirs.js';
import { ConfigError } from '../../src/errors.js';
import { schedule } from '../../training/loops/trainer.js';
import { readRunConfig } from '../../training/run/run-files.js';
import type { RunConfig } from '../../training/loops/trainer.js';
import { TOY_TASKS } from './fixtures/toy-env.js';
import { loadCheckpoint, readMetrics, runPaths, TIMING_FIELDS, type MetricRecord } from '../../training/run/run-files.js';
import { TOY_SETTINGS, trainToy } from './fixtures/toy-run.js';

const freshRun = () => join(tempDir('train-'), 'run');
const CHILD = join(import.meta.dirname, 'fixtures', 'train-toy-child.ts');

/** Metrics without the fields that measure time. */
function untimed(metrics: readonly MetricRecord[]): Record<string, unknown>[] {
  return metrics.map((m) => Object.fromEntries(Object.entries(m).filter(([k]) => !(TIMING_FIELDS as readonly string[]).includes(k))));
}

describe('training loop (toy env, no Docker)', () => {
  it('lifts training-task success from the random baseline to at least 90 % with BC then PG', async () => {
    const dir = freshRun();
    const summary = await trainToy(dir, { resume: false });
    expect(summary.baseline.train).toBeLessThan(0.5);
    expect(summary.final.train).toBeGreaterThanOrEqual(0.9);
    const metrics = readMetrics(runPaths(dir).metrics);
    expect(metrics.map((m) => m.iteration)).toEqual(Array.from({ length: schedule(TOY_SETTINGS).length }, (_, i) => i));
    expect(metrics.filter((m) => m.phase === 'pg').every((m) => m.loss !== undefined && m.envStepsPerSec! > 0)).toBe(true);
    const bc = metrics.filter((m) => m.phase === 'bc');
    expect(bc.at(-1)!.loss!).toBeLessThan(bc[0]!.loss!);
  }, 120_000);

  it('repeats a run exactly from the same seed, and differs with another', async () => {
    const [a, b, c] = [freshRun(), freshRun(), freshRun()];
    const short = { bcEpochs: 3, pgIterations: 2, evalEvery: 2 };
    await trainToy(a, { resume: false, settings: short });
    await trainToy(b, { resume: false, settings: short });
    await trainToy(c, { resume: false, settings: { ...short, seed: 8 } });
    const [ma, mb, mc] = [a, b, c].map((d) => untimed(readMetrics(runPaths(d).metrics)));
    expect(mb).toEqual(ma);
    expect(mc).not.toEqual(ma);
    const weights = (dir: string) => {
      const { weights, optimizers, nextIteration } = loadCheckpoint(runPaths(dir))!;
      // Optimizer slots are named after tfjs's per-process variable names; compare their values.
      const values = Object.values(optimizers).map((list) => list.map(({ shape, data }) => ({ shape, data })));
      return { weights, values, nextIteration };
    };
    expect(weights(b)).toEqual(weights(a));
  }, 120_000);

  it('refuses to start over a run, and to resume one without a checkpoint', async () => {
    const dir = freshRun();
    await trainToy(dir, { resume: false, settings: { bcEpochs: 1, pgIterations: 0 } });
    await expect(trainToy(dir, { resume: false })).rejects.toThrow(ConfigError);
    await expect(trainToy(dir, { resume: false })).rejects.toThrow(/already holds a run/);
  }, 60_000);

  it('continues a SIGKILLed run from its checkpoint: the resumed curve equals the uninterrupted one', async () => {
    const killed = freshRun();
    const paths = runPaths(killed);
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, killed], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    // Kill once the run is into policy gradient (past BC and the first evaluation).
    const target = TOY_SETTINGS.bcEpochs + 4;
    while (readMetrics(paths.metrics).length < target) {
      if (child.exitCode !== null) throw new Error(`training child ended early: ${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    const beforeResume = readMetrics(paths.metrics);
    expect(beforeResume.length).toBeLessThan(schedule(TOY_SETTINGS).length);
    expect(existsSync(paths.checkpoint)).toBe(true);

    await trainToy(killed, { resume: true });
    const resumed = readMetrics(paths.metrics);
    const whole = freshRun();
    await trainToy(whole, { resume: false });
    expect(untimed(resumed)).toEqual(untimed(readMetrics(runPaths(whole).metrics)));
    // Time keeps counting from the checkpoint rather than restarting at zero.
    const firstResumed = resumed[beforeResume.length - 1]!;
    expect(firstResumed.elapsedSec).toBeGreaterThanOrEqual(beforeResume.at(-2)!.elapsedSec);
  }, 180_000);

  it('with retrieval: measures the retrieval policy, and repeats exactly from the same seed', async () => {
    const [a, b] = [freshRun(), freshRun()];
    const settings = { bcEpochs: 3, pgIterations: 2, evalEvery: 2, retrieved: 3 };
    const summary = await trainToy(a, { resume: false, settings });
    await trainToy(b, { resume: false, settings });
    const metrics = readMetrics(runPaths(a).metrics);
    expect(metrics.map((m) => m.phase).slice(0, 3)).toEqual(['baseline', 'retrieval', 'bc']);
    // The retriever searches the training demonstrations: the nearest query is the task's own, its gold is the first command.
    expect(summary.retrieval!.train).toBe(1);
    expect(untimed(readMetrics(runPaths(b).metrics))).toEqual(untimed(metrics));
  }, 120_000);

  it('with corpus imitation: imitates the shipped corpus between retrieval and cloning, and repeats exactly from the same seed', async () => {
    const [a, b] = [freshRun(), freshRun()];
    const settings = { bcEpochs: 2, pgIterations: 1, evalEvery: 1, retrieved: 3, corpus: 'nl2bash' as const, corpusEpochs: 2, corpusPairsPerEpoch: 32 };
    const summary = await trainToy(a, { resume: false, settings });
    await trainToy(b, { resume: false, settings });
    const metrics = readMetrics(runPaths(a).metrics);
    expect(metrics.map((m) => m.phase).slice(0, 5)).toEqual(['baseline', 'retrieval', 'corpus', 'corpus', 'bc']);
    expect(metrics.filter((m) => m.phase === 'corpus').every((m) => m.loss! > 0 && m.accuracy! >= 0)).toBe(true);
    expect(summary.nearDuplicates.corpusKept + summary.nearDuplicates.corpusRemoved).toBe(12_607);
    expect(untimed(readMetrics(runPaths(b).metrics))).toEqual(untimed(metrics));
  }, 180_000);

  it('removes training tasks that are near-duplicates of a held-out task, and records them', async () => {
    const dir = freshRun();
    await trainToy(dir, { resume: false, settings: { bcEpochs: 1, pgIterations: 0, removeNearDuplicates: true } });
    const config = readRunConfig<RunConfig>(runPaths(dir).config, '--run');
    // Toy queries are "Please <verb> the <noun> in the store.": same verb = 3 of 5 content words shared (Jaccard 0.6).
    const verb = (id: string) => TOY_TASKS.find((t) => t.id === id)!.query.split(' ')[1];
    const heldOutVerbs = new Set(config.split.heldOut.map(verb));
    const all = TOY_TASKS.map((t) => t.id).filter((id) => !config.split.heldOut.includes(id));
    expect(config.nearDuplicates!.trainTasks.sort()).toEqual(all.filter((id) => heldOutVerbs.has(verb(id))).sort());
    expect(config.nearDuplicates!.trainTasks.length).toBeGreaterThan(0);
    expect(config.split.train.sort()).toEqual(all.filter((id) => !heldOutVerbs.has(verb(id))).sort());
  }, 60_000);
});
