/**
 * A first build says what it builds and about how long, once; a second finds the image and
 * says nothing. `images build --env` and `doctor` name every env's images (before, only bash
 * and python: the ctf, sql and jq images were built, unannounced, by a command's first run).
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DoctorReport } from '../../src/doctor/index.js';
import { ensureImage } from '../../src/images/image-builder.js';
import type { ImageRecipe } from '../../src/images/recipe.js';
import { probeEngine, requireEngine, skipWithoutEngine } from '../setup/docker.js';

const CLI = join(import.meta.dirname, '../../bin/intercode.js');
const engine = await probeEngine();
const made: string[] = [];

afterAll(async () => {
  if (!engine.ok) return;
  for (const tag of made) await engine.docker.getImage(tag).remove({ force: true }).catch(() => undefined);
});

const cli = (args: string[]) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 300_000 });

describe.skipIf(skipWithoutEngine(engine, 'first image builds'))('first image builds', () => {
  beforeAll(() => {
    requireEngine(engine);
  });

  it('the first build of an image says what and about how long; the next says nothing', async () => {
    const docker = requireEngine(engine);
    // A recipe no other run has built: its Dockerfile holds a random word.
    const recipe: ImageRecipe = { repository: 'intercode-ts/test-first-build', dockerfile: `ARG BASE\nFROM \${BASE}\nRUN echo ${randomBytes(6).toString('hex')}\n`, files: {}, parent: 'base', typicalBuildSeconds: 4 };
    const first: string[] = [];
    const tag = await ensureImage(docker, recipe, (line) => first.push(line));
    made.push(tag);
    expect(first[0]).toBe('first use: building intercode-ts/test-first-build (about 4 s) — about 4 s on a 2-core machine, once; later runs reuse it');
    expect(first).toContain(`building ${tag}`);
    const second: string[] = [];
    expect(await ensureImage(docker, recipe, (line) => second.push(line))).toBe(tag);
    expect(second).toEqual([]);
  }, 300_000);

  it('images build --env jq --json: the jq env has an image of its own name (the bash runtime image)', () => {
    const run = cli(['images', 'build', '--env', 'jq', '--json']);
    expect(run.status, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout) as { images: { name: string; env: string; tag: string; built: boolean }[]; built: boolean };
    expect(out.images).toEqual([expect.objectContaining({ name: 'jq', env: 'jq', tag: expect.stringMatching(/^intercode-ts\/bash:[0-9a-f]{16}$/) })]);
    const again = cli(['images', 'build', 'jq']);
    expect(again.stdout.trim()).toMatch(/^jq: intercode-ts\/bash:[0-9a-f]{16} \(already built\)$/);
  }, 300_000);

  it('images build --env task is refused: its images are made per task', () => {
    const run = cli(['images', 'build', '--env', 'task']);
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/--env names env "task", whose images are made per task/);
  });

  it("doctor's images check names every env's image, and the per-task ones", () => {
    const { KUBECONFIG: _cluster, ...env } = process.env;
    const run = spawnSync(process.execPath, [CLI, 'doctor', '--json'], { encoding: 'utf8', env, timeout: 120_000 });
    const images = (JSON.parse(run.stdout) as DoctorReport).checks.find((c) => c.id === 'images')!;
    for (const name of ['bash', 'sql', 'python', 'ctf', 'jq']) expect(images.summary).toMatch(new RegExp(`(^|[ :,])${name} (intercode-ts/|\\(needs )`));
    expect(images.summary).toMatch(/bash:ubuntu-jammy/);
    expect(images.summary).toContain('per task, built on first use: task: one per Harbor task directory');
  }, 120_000);
});
