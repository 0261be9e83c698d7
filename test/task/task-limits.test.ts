/**
 * task.toml's limits honoured, in Docker: `[agent] timeout_sec` (an action runs for at most
 * the agent's time left; once it is over the verifier scores the episode) and
 * `[environment] build_timeout_sec` (a build past it is cancelled: a typed ImageError, no image).
 */
import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTaskEnvs, environmentImage, readTaskDir, type TaskDirEnv } from '../../envs/task/index.js';
import { ImageError } from '../../src/errors.js';
import { DEBIAN_BOOKWORM } from '../../src/images/base-images.js';
import { recipeTag } from '../../src/images/recipe.js';
import { packagePath } from '../../src/package-path.js';
import { dockerTestFile, requireEngine, skipWithoutEngine } from '../setup/docker.js';

const { engine } = await dockerTestFile();
const LIMITS = packagePath('test', 'fixtures', 'harbor-tasks', 'limits');

describe.skipIf(skipWithoutEngine(engine, 'task limits'))('task.toml limits in Docker', () => {
  let env: TaskDirEnv;

  beforeAll(async () => {
    [env] = await createTaskEnvs({ data: join(LIMITS, 'agent-timeout'), keepWarmMs: 0 }, 1);
  }, 600_000);
  afterAll(async () => {
    await env?.close();
  });

  it('[agent] timeout_sec: an action that runs past it is cut there, and the verifier scores what the agent left', async () => {
    await env.reset({ task: 0 });
    const started = performance.now();
    const step = await env.step('sleep 60 && echo done > /app/out.txt');
    expect(performance.now() - started).toBeLessThan(30_000);
    expect(step).toMatchObject({ reward: 0, terminated: true, truncated: false });
    expect(step.observation).toContain("the task's agent time limit (4 s) is over");
    expect(step.info.score?.details).toMatchObject({ agentTimeout: { limitSec: 4 } });
  });

  it('[agent] timeout_sec: the first action after it ends the episode unrun, scored on what was done in time', async () => {
    await env.reset({ task: 0 });
    expect((await env.step('echo done > /app/out.txt')).terminated).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 4_500));
    const step = await env.step('echo late > /app/out.txt');
    expect(step).toMatchObject({ reward: 1, terminated: true, truncated: false });
    expect(step.info.score?.details).toMatchObject({ agentTimeout: { limitSec: 4 } });
  });

  it('[environment] build_timeout_sec: a build past it is cancelled, an ImageError, and no image is left', async () => {
    const docker = requireEngine(engine);
    // A copy whose RUN line carries a nonce: the engine's build cache cannot hold its slow
    // step from an earlier build (one that ran to its end would make this build instant).
    const copy = await mkdtemp(join(tmpdir(), 'intercode-slow-build-'));
    const dir = join(copy, 'slow-build');
    await cp(join(LIMITS, 'slow-build'), dir, { recursive: true });
    const dockerfile = join(dir, 'environment', 'Dockerfile');
    await writeFile(dockerfile, (await readFile(dockerfile, 'utf8')).replace('RUN sleep', `RUN echo ${randomBytes(8).toString('hex')} && sleep`));
    const started = performance.now();
    const error = await createTaskEnvs({ data: dir, keepWarmMs: 0 }, 1).catch((e: unknown) => e);
    const { recipe } = await environmentImage(await readTaskDir(dir), async () => undefined);
    await rm(copy, { recursive: true, force: true }).catch(() => undefined);
    expect(performance.now() - started).toBeLessThan(60_000);
    expect(error).toBeInstanceOf(ImageError);
    expect(error).toMatchObject({ code: 'IMAGE_BUILD_FAILED' });
    expect((error as Error).message).toContain('ran past its 3 s limit');
    const parent = await docker.getImage(DEBIAN_BOOKWORM.tag).inspect().catch(() => undefined);
    expect(parent).toBeDefined();
    expect(await docker.getImage(recipeTag(recipe, parent!.Id)).inspect().catch(() => 'none')).toBe('none');
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const building = await docker.listContainers({ all: true });
    expect(building.filter((c) => c.Command.includes('intercode-slow-build-fixture'))).toEqual([]);
  }, 120_000);
});
