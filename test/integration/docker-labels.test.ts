/**
 * Labels and cleanup on a real engine: what the test helpers in test/setup/docker.ts
 * rely on. `cleanup({ testRun })` must remove exactly the containers one test run made.
 */
import type Docker from 'dockerode';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureImage } from '../../src/images/image-builder.js';
import { cleanup } from '../../src/sandbox/docker/cleanup.js';
import { DockerRuntime } from '../../src/sandbox/docker/docker-runtime.js';
import { OWNER_LABEL, TEST_LABEL } from '../../src/sandbox/docker/labels.js';
import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS, type Sandbox } from '../../src/sandbox/types.js';
import { bashTestbedImage, dockerTestFile, requireEngine, skipWithoutEngine, testContainers } from '../setup/docker.js';

const { testRun, engine } = await dockerTestFile();

describe.skipIf(skipWithoutEngine(engine, 'Docker label tests'))('container labels and cleanup', () => {
  let docker: Docker;
  let runtime: DockerRuntime;
  let image: string;
  const strays: string[] = [];
  const images: string[] = [];

  beforeAll(async () => {
    docker = requireEngine(engine);
    runtime = new DockerRuntime(docker);
    image = await bashTestbedImage(docker);
  });

  afterAll(async () => {
    for (const id of strays) await docker.getContainer(id).remove({ force: true }).catch(() => undefined);
    for (const tag of images) await docker.getImage(tag).remove({ force: true }).catch(() => undefined);
  });

  /** Creates a sandbox with INTERCODE_TEST_RUN set to `run` (or unset), then restores this file's run. */
  async function createAs(run: string | undefined, from = image): Promise<Sandbox> {
    if (run === undefined) delete process.env.INTERCODE_TEST_RUN;
    else process.env.INTERCODE_TEST_RUN = run;
    try {
      return await runtime.create({ image: from, hostname: 'intercode', limits: DEFAULT_LIMITS, capabilities: DEFAULT_CAPABILITIES });
    } finally {
      process.env.INTERCODE_TEST_RUN = testRun;
    }
  }

  const labelsOf = async (sandbox: Sandbox) => (await docker.getContainer(sandbox.id).inspect()).Config.Labels;

  it('cleanup({ testRun }) removes the containers of that run and no others', async () => {
    const otherRun = `${testRun}-other`;
    const mine = await createAs(testRun);
    const other = await createAs(otherRun);
    strays.push(other.id);
    expect((await labelsOf(mine))[TEST_LABEL]).toBe(testRun);
    expect((await labelsOf(other))[TEST_LABEL]).toBe(otherRun);
    expect((await labelsOf(mine))[OWNER_LABEL]).toBe('intercode-ts');

    expect(await cleanup(docker, { testRun })).toEqual({ containers: 1, images: 0 });
    expect(await testContainers(docker, testRun)).toEqual([]);
    expect((await testContainers(docker, otherRun)).map((c) => c.Id)).toEqual([other.id]);
    await cleanup(docker, { testRun: otherRun });
    expect(await testContainers(docker, otherRun)).toEqual([]);
  });

  // Regression (was a bug): ensureImage puts the test label on images it builds while
  // INTERCODE_TEST_RUN is set, and containers inherit image labels. Every container later
  // made from that image — by a run that is not a test at all — carries the old test run's
  // label, and that run's cleanup({ testRun }) removes it.
  it('a container made outside a test run does not carry the label of the run that built its image', async () => {
    const builderRun = `${testRun}-builder`;
    process.env.INTERCODE_TEST_RUN = builderRun;
    let tag: string;
    try {
      tag = await ensureImage(
        docker,
        { repository: 'intercode-ts/label-probe', dockerfile: `ARG BASE\nFROM \${BASE}\nLABEL probe=${randomBytes(6).toString('hex')}\n`, files: {}, parent: 'base' },
        () => undefined,
      );
    } finally {
      process.env.INTERCODE_TEST_RUN = testRun;
    }
    images.push(tag);
    const production = await createAs(undefined, tag);
    strays.push(production.id);
    expect((await labelsOf(production))[TEST_LABEL]).toBeUndefined();
    expect(await cleanup(docker, { testRun: builderRun })).toEqual({ containers: 0, images: 0 });
  });

  // Regression (was a bug): two envs opened at once (SQL envs over two dumps share the server
  // image) built the same recipe twice; the tag moved to the second image and left the first untagged.
  it('one recipe asked for twice at once is built once, leaving no untagged image', async () => {
    const probe = randomBytes(6).toString('hex');
    const recipe = { repository: 'intercode-ts/build-once-probe', dockerfile: `ARG BASE\nFROM \${BASE}\nRUN echo ${probe} > /probe\nLABEL probe=${probe}\n`, files: {}, parent: 'base' as const };
    const tags = await Promise.all([ensureImage(docker, recipe, () => undefined), ensureImage(docker, recipe, () => undefined)]);
    images.push(tags[0]);
    expect(tags[1]).toBe(tags[0]);
    // Top-level images only (a build's intermediate layers are listed with all: true); an untagged one is <none>:<none>.
    const built = await docker.listImages({ filters: JSON.stringify({ label: [`probe=${probe}`] }) });
    expect(built.map((image) => image.RepoTags)).toEqual([[tags[0]]]);
  });
});
