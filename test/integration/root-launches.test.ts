/**
 * The helper answers a launch once its process has exec'd, and serves other requests while
 * one is still starting (native/episode-root.c, finish_launch). Many launches at once over
 * several roots each get their own process's exit code, including processes that end before
 * their launch is answered; a launch refused before its process ran (its pipes gone) is
 * refused, and the root goes on serving. These fail if answers or exits were crossed, lost
 * or reported for a refused launch. A destroyed root's folder and its channel's are removed
 * by the helper (RootPool.kill): none is left.
 */
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { channelRoot } from '../../src/sandbox/docker/fifo-channel.js';
import type { RootPool } from '../../src/sandbox/roots/root-pool.js';
import { EpisodeRootRuntime } from '../../src/sandbox/roots/root-runtime.js';
import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS, type Sandbox, type SandboxSpec } from '../../src/sandbox/types.js';
import { bashTestbedImage, dockerTestFile, gvisorGap, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { rootFolderOf } from '../setup/root-folders.js';

const { engine } = await dockerTestFile();
const skip = skipWithoutEngine(engine, 'episode-root launches') || gvisorGap('episode roots run under runc only');

describe.skipIf(skip)('launches through the episode-root helper', () => {
  let runtime: EpisodeRootRuntime | undefined;
  const sandboxes: Sandbox[] = [];
  afterAll(async () => {
    await Promise.all(sandboxes.map((s) => s.destroy().catch(() => undefined)));
    await runtime?.close();
  });

  it('many at once over four roots: each exec gets its own exit code and output', async () => {
    const docker = requireEngine(engine);
    runtime = new EpisodeRootRuntime(docker);
    const spec: SandboxSpec = { image: await bashTestbedImage(docker), hostname: 'intercode', limits: DEFAULT_LIMITS, capabilities: [...DEFAULT_CAPABILITIES] };
    sandboxes.push(...(await Promise.all([0, 1, 2, 3].map(() => runtime!.create(spec)))));
    for (let round = 0; round < 3; round++) {
      const runs = Array.from({ length: 48 }, (_, i) => {
        const code = (i * 7 + round) % 100;
        // Half end at once (before their launch can be answered), half after a moment.
        const script = i % 2 === 0 ? `exit ${code}` : `echo out-${i}; sleep 0.0$((${i} % 5)); exit ${code}`;
        return sandboxes[i % 4]!.exec(['/bin/sh', '-c', script]).then((result) => ({ i, code, result }));
      });
      for (const { i, code, result } of await Promise.all(runs)) {
        expect(result.exitCode, `exec ${i} of round ${round}`).toBe(code);
        expect(result.output.toString()).toBe(i % 2 === 0 ? '' : `out-${i}\n`);
      }
    }
  }, 120_000);

  it('a program that is not there runs and exits 127; the root still serves', async () => {
    const sandbox = sandboxes[0]!;
    const missing = await sandbox.exec(['/no/such/program']);
    expect(missing.exitCode).toBe(127);
    const after = await sandbox.exec(['/bin/sh', '-c', 'echo still; exit 3']);
    expect(after.exitCode).toBe(3);
    expect(after.output.toString()).toBe('still\n');
  });

  it("a destroyed root's folder and its channel's folder are removed", async () => {
    const docker = requireEngine(engine);
    const info = (await docker.info()) as { DockerRootDir?: string };
    const base = join(dirname(info.DockerRootDir ?? '/var/lib/docker'), 'intercode-roots');
    const ownPools = readdirSync(base).filter((name) => name.startsWith(`${process.pid}-`));
    const rootFolder = (id: string) => ownPools.map((pool) => join(base, pool, 'roots', id)).find((dir) => existsSync(dir));
    const folders = sandboxes.map((s) => rootFolder(s.id));
    for (const folder of folders) expect(folder).toBeDefined();
    // This process's channel folders of the pool (one per live root, under the pool's own folder of channels).
    const channelFolders = () => readdirSync(channelRoot()).filter((name) => name.startsWith(`${process.pid}-`)).flatMap((pool) => readdirSync(join(channelRoot(), pool)).map((c) => join(channelRoot(), pool, c)));
    expect(channelFolders().length).toBeGreaterThanOrEqual(sandboxes.length);
    await Promise.all(sandboxes.splice(0).map((s) => s.destroy()));
    const deadline = Date.now() + 5_000;
    while (Date.now() < deadline && (folders.some((f) => existsSync(f!)) || channelFolders().length > 0)) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(folders.filter((f) => existsSync(f!))).toEqual([]);
    expect(channelFolders()).toEqual([]);
  });

  it('a kill names only absolute folders without `..` for removal: others are left, the valid one after them removed', async () => {
    const docker = requireEngine(engine);
    const spec: SandboxSpec = { image: await bashTestbedImage(docker), hostname: 'intercode', limits: DEFAULT_LIMITS, capabilities: [...DEFAULT_CAPABILITIES] };
    runtime ??= new EpisodeRootRuntime(docker);
    const sandbox = await runtime.create(spec);
    sandboxes.push(sandbox);
    // The harness's own request, malformed as a bug could make it (the socket is the harness's alone).
    const pool = (sandbox as unknown as { pool: RootPool }).pool;
    const poolDir = dirname(dirname(rootFolderOf(sandbox.id)));
    const victims = ['relative', 'dotted', 'long'].map((name) => join(poolDir, `victim-${name}`));
    const marker = join(poolDir, 'removed-last');
    for (const dir of [...victims, marker]) mkdirSync(join(dir, 'inside'), { recursive: true });
    const named = [
      victims[0]!.slice(1), // relative: the helper's working folder is /
      `${poolDir}/roots/../victim-dotted`,
      `${victims[0]}/inside/..`,
      `${poolDir}/${'./'.repeat(2100)}victim-long`, // 4,096 characters or more
      '/',
      '',
    ];
    await pool.kill(sandbox.id, [...named, marker]);
    // The remover takes folders in order: once the marker is gone, those before it were refused or done.
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && existsSync(marker)) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(existsSync(marker)).toBe(false);
    for (const dir of victims) expect(existsSync(join(dir, 'inside')), dir).toBe(true);
    for (const dir of victims) rmSync(dir, { recursive: true });
  });
});
