/**
 * Helpers for Docker-backed tests.
 *
 * Policy: under `CI=true` a missing engine is a failure (the suite's `beforeAll` throws
 * the EngineUnreachableError message); elsewhere the Docker-backed suites are skipped
 * with a printed reason. Every test file gets its own test-run label value
 * (INTERCODE_TEST_RUN), so its `afterAll` removes exactly the containers it made and
 * checks that none is left.
 *
 * Usage in a test file:
 *
 *     const testRun = startTestRun();                   // before anything is created
 *     const engine = await probeEngine();               // top-level await
 *     afterAll(() => removeTestContainers(engine.ok ? engine.docker : undefined, testRun));
 *     describe.skipIf(skipWithoutEngine(engine, 'shell session'))('…', () => {
 *       beforeAll(async () => {
 *         const docker = requireEngine(engine);         // under CI: throws EngineUnreachableError
 *         const image = await bashTestbedImage(docker);
 *       });
 *     });
 *
 * Images are built with the test label switched off (see {@link buildImageUnlabelled}).
 */
import type Docker from 'dockerode';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { afterAll, expect } from 'vitest';
import { BUILTIN_TESTBED, bashTestbedRecipe } from '../../envs/bash/images.js';
import { EngineUnreachableError } from '../../src/errors.js';
import { ensureImage } from '../../src/images/image-builder.js';
import type { ImageRecipe } from '../../src/images/recipe.js';
import { cleanup } from '../../src/sandbox/docker/cleanup.js';
import { connectEngine } from '../../src/sandbox/docker/engine.js';
import { TEST_LABEL } from '../../src/sandbox/docker/labels.js';
import { EngineSet } from '../../src/sandbox/backends/engine-set.js';
import { DockerRuntime } from '../../src/sandbox/docker/docker-runtime.js';
import { EpisodeRootRuntime } from '../../src/sandbox/roots/root-runtime.js';
import type { SandboxRuntime, SandboxSettings } from '../../src/sandbox/types.js';

export type EngineProbe = { ok: true; docker: Docker } | { ok: false; error: EngineUnreachableError };

export const IN_CI = process.env.CI === 'true';

/** Pings the engine (DOCKER_HOST or the local socket). Never throws. */
export async function probeEngine(): Promise<EngineProbe> {
  try {
    return { ok: true, docker: await connectEngine(undefined, 5_000) };
  } catch (error) {
    if (error instanceof EngineUnreachableError) return { ok: false, error };
    throw error;
  }
}

/** True when a Docker engine answers. */
export async function dockerAvailable(): Promise<boolean> {
  return (await probeEngine()).ok;
}

/**
 * Whether a Docker-backed suite must be skipped: only outside CI, and only without an
 * engine. Prints the reason when it skips.
 */
export function skipWithoutEngine(probe: EngineProbe, suite: string): boolean {
  if (probe.ok || IN_CI) return false;
  console.warn(`skipping ${suite}: no Docker engine (${probe.error.message})`);
  return true;
}

/** The engine, or (under CI, where the suite is not skipped) the EngineUnreachableError. */
export function requireEngine(probe: EngineProbe): Docker {
  if (!probe.ok) throw probe.error;
  return probe.docker;
}

/**
 * Gives this test file a unique test-run id and sets INTERCODE_TEST_RUN to it, so every
 * container (and image) made from now on carries the test label. Call before creating anything.
 */
export function startTestRun(): string {
  const run = `vitest-${process.pid}-${randomBytes(4).toString('hex')}`;
  process.env.INTERCODE_TEST_RUN = run;
  return run;
}

/** Ids of the containers (running or not) that carry this test run's label. */
export async function testContainers(docker: Docker, testRun: string, running = false): Promise<Docker.ContainerInfo[]> {
  return docker.listContainers({ all: !running, filters: { label: [`${TEST_LABEL}=${testRun}`] } });
}

/** Removes this run's containers with the project's `cleanup`, then asserts none remains. */
export async function removeTestContainers(docker: Docker | undefined, testRun: string): Promise<void> {
  if (!docker) return;
  await cleanup(docker, { testRun });
  const left = await testContainers(docker, testRun);
  expect(left.map((c) => `${c.Id.slice(0, 12)} ${c.State}`)).toEqual([]);
}

/**
 * What every Docker-backed test file starts with: its own test-run label, the engine probe,
 * and an `afterAll` that removes the file's containers and checks that none is left.
 */
export async function dockerTestFile(): Promise<{ testRun: string; engine: EngineProbe }> {
  const testRun = startTestRun();
  const engine = await probeEngine();
  afterAll(() => removeTestContainers(engine.ok ? engine.docker : undefined, testRun));
  return { testRun, engine };
}

/**
 * A small testbed, used when the built-in one (datasets/bash/testbed) does not exist. It
 * has the files the Docker-backed tests touch in the built-in one.
 */
export const FALLBACK_TESTBED_FILES: Readonly<Record<string, string | Buffer>> = {
  'README.md': '# fallback testbed\n',
  'LICENSE': 'MIT\n',
  'src/app.py': 'print("hello")\n',
  'logs/app.log': '2024-01-01 10:00:00 INFO [core] up\n2024-01-01 10:01:00 ERROR [db] down\n2024-01-01 10:02:00 ERROR [net] lost\n',
  'data/archive/readings-2022-12.csv.gz': gzipSync('date,station,value\n2022-12-01,A,1.5\n2022-12-02,B,2.5\n'),
  'scripts/lint.sh': '#!/bin/sh\necho lint\n',
  '.env': 'LOG_LEVEL=info\n',
};

/** Writes `files` under a new temporary directory and returns it. */
export async function writeTree(files: Readonly<Record<string, string | Buffer>>, prefix = 'intercode-testbed-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  for (const [name, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, name)), { recursive: true });
    await writeFile(join(dir, name), content);
  }
  return dir;
}

/**
 * Builds (or finds) an image with INTERCODE_TEST_RUN unset for the duration of the build.
 * An image built during a test run carries the test label, and every container later
 * made from it — by any process — inherits that label, so this run's cleanup would
 * remove other people's containers (reported as a product bug; see
 * test/integration/docker-labels.test.ts). Building unlabelled avoids that.
 * @returns the image tag.
 */
export async function buildImageUnlabelled(docker: Docker, recipe: ImageRecipe): Promise<string> {
  const testRun = process.env.INTERCODE_TEST_RUN;
  delete process.env.INTERCODE_TEST_RUN;
  try {
    return await ensureImage(docker, recipe, (line) => console.log(`[image] ${line}`));
  } finally {
    if (testRun !== undefined) process.env.INTERCODE_TEST_RUN = testRun;
  }
}

/**
 * The bash testbed image: from `testbed` (a directory or an fs-N.tar), else the built-in
 * testbed when it exists, else a small testbed written to a temporary directory (removed
 * again after the build). Built without the test label (see {@link buildImageUnlabelled}).
 * @returns the image tag.
 */
export async function bashTestbedImage(docker: Docker, testbed?: string): Promise<string> {
  if (testbed !== undefined || existsSync(BUILTIN_TESTBED)) return buildImageUnlabelled(docker, await bashTestbedRecipe(testbed));
  const dir = await writeTree(FALLBACK_TESTBED_FILES);
  try {
    return await buildImageUnlabelled(docker, await bashTestbedRecipe(dir));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Sandboxes run under gVisor in this test run (INTERCODE_RUNTIME=runsc, see .ci/gvisor-tests). */
export const UNDER_GVISOR = process.env.INTERCODE_RUNTIME === 'runsc';

/**
 * What this test run's sandboxes are made with: INTERCODE_RUNTIME (runsc under
 * .ci/gvisor-tests) and INTERCODE_SANDBOX_KIND (episode-roots: the files that make their
 * engines with {@link testEngines}), read here as the CLI reads them, and handed to every
 * runtime those test files make (the sandbox layer reads no variable).
 */
export const TEST_SANDBOX_SETTINGS: SandboxSettings = {
  ...(process.env.INTERCODE_RUNTIME ? { ociRuntime: process.env.INTERCODE_RUNTIME } : {}),
  ...(process.env.INTERCODE_SANDBOX_KIND === 'episode-roots' ? { kind: 'episode-roots' as const } : {}),
};

/** The local engine (DOCKER_HOST, else the socket), its sandboxes made with {@link TEST_SANDBOX_SETTINGS}. */
export function testEngines(): EngineSet {
  return EngineSet.local(TEST_SANDBOX_SETTINGS);
}

/**
 * A runtime of the local engine `docker` as {@link TEST_SANDBOX_SETTINGS} say: episode roots
 * when the kind says so (the episode-roots pass), else containers. For files that make their
 * runtime themselves rather than engines.
 */
export function testRuntime(docker: Docker): SandboxRuntime {
  return TEST_SANDBOX_SETTINGS.kind === 'episode-roots' ? new EpisodeRootRuntime(docker, TEST_SANDBOX_SETTINGS) : new DockerRuntime(docker, TEST_SANDBOX_SETTINGS);
}

const sharedRuntimes = new WeakMap<Docker, SandboxRuntime>();

/**
 * {@link testRuntime} of `docker`, one for the whole test file: on episode roots every env of
 * the file then shares one pool container per spec (its pools go when the file's process ends).
 */
export function sharedTestRuntime(docker: Docker): SandboxRuntime {
  let runtime = sharedRuntimes.get(docker);
  if (!runtime) {
    runtime = testRuntime(docker);
    sharedRuntimes.set(docker, runtime);
  }
  return runtime;
}

/**
 * For `it.skipIf(gvisorGap('why'))`: true under gVisor, printing why the test cannot hold
 * there (a documented limit of Debian's runsc 20221219, see docs/security.md).
 */
export function gvisorGap(reason: string): boolean {
  if (UNDER_GVISOR) console.warn(`skipping under gVisor: ${reason}`);
  return UNDER_GVISOR;
}
