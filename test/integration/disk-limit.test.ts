/**
 * A sandbox cannot take more disk than its limit. On the shared engine (overlay2 on ext4: no
 * quota) the limit is `watched`: a file-size rlimit and checks of the writable layer; on a
 * second engine whose data root is a loop-mounted btrfs, the engine enforces it. Attacks:
 * one huge file, many files, eight sandboxes at once; each time the host (or the engine's
 * file system) keeps its free space and the next episode is clean.
 */
import type Docker from 'dockerode';
import { spawnSync } from 'node:child_process';
import { readFileSync, statfsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createBashEnv } from '../../envs/bash/index.js';
import { createPythonEnv } from '../../envs/python/index.js';
import { transferImage } from '../../src/sandbox/backends/image-provisioning.js';
import { createBtrfsDataRoot, btrfsDataRootUnavailable, type BtrfsDataRoot } from '../../src/sandbox/disk/btrfs-data-root.js';
import { DockerRuntime } from '../../src/sandbox/docker/docker-runtime.js';
import { treeBytes } from '../../src/sandbox/disk/layer-usage.js';
import { connectEngine, defaultEndpoint } from '../../src/sandbox/docker/engine.js';
import { ShellSession } from '../../src/sandbox/shell/shell-session.js';
import type { CommandResult } from '../../src/sandbox/shell/types.js';
import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS, type Sandbox } from '../../src/sandbox/types.js';
import { bashTestbedImage, dockerTestFile, IN_CI, requireEngine, skipWithoutEngine, TEST_SANDBOX_SETTINGS, testEngines } from '../setup/docker.js';
import { SecondDockerd, secondDockerdUnavailable } from '../setup/second-dockerd.js';

const { engine } = await dockerTestFile();

const MiB = 2 ** 20;
const LIMIT = 256 * MiB;
const limits = { ...DEFAULT_LIMITS, diskBytes: LIMIT };
const freeBytes = (path: string) => {
  const fs = statfsSync(path);
  return fs.bavail * fs.bsize;
};
const diskEvent = (result: CommandResult) => result.events.find((e) => e.kind === 'disk-limit');

/** Samples the free space of `path` every 5 ms: the most it fell below its start. */
function watchFreeSpace(path: string): { stop(): number } {
  const start = freeBytes(path);
  let lowest = start;
  const timer = setInterval(() => (lowest = Math.min(lowest, freeBytes(path))), 5);
  return {
    stop() {
      clearInterval(timer);
      return start - Math.min(lowest, freeBytes(path));
    },
  };
}

/** One file of 20 GB, three ways; then files of 200 MB until one fails. */
const ONE_HUGE_FILE = 'fallocate -l 20G /huge; echo "fallocate=$?"; truncate -s 20G /sparse; head -c 20G /dev/zero > /huge2; echo "head=$?"';
/** Size and blocks held by the three files (a separate step: the watch may end the writing one at the limit). */
const SIZES = 'find /huge /huge2 /sparse -printf "%s %b %p\\n"';
/**
 * What a file's blocks may hold beyond its data: ext4 counts an extent-tree block in them
 * when the file is in more than four pieces (seen in CI: a 256 MiB file written by `head`
 * on a busy disk held 4 KiB more).
 */
const FS_METADATA_BYTES = 64 * 1024;
const MANY_FILES = 'for i in $(seq 100); do fallocate -l 200M /fill$i || break; done; echo "stopped at $i"';
/**
 * The same files at 2 GB/s: every check has time to see the layer and kill the loop long
 * before its end, however loaded the host (MANY_FILES may end first: see docs/security.md).
 */
const MANY_FILES_PACED = 'for i in $(seq 100); do fallocate -l 200M /fill$i || break; sleep 0.1; done; echo "stopped at $i"';

describe.skipIf(skipWithoutEngine(engine, 'disk limit tests'))('disk limit', () => {
  let docker: Docker;
  let image: string;
  const made: Sandbox[] = [];

  beforeAll(async () => {
    docker = requireEngine(engine);
    image = await bashTestbedImage(docker);
  });

  afterEach(async () => {
    await Promise.all(made.splice(0).map((s) => s.destroy().catch(() => undefined)));
  });

  async function sandboxes(runtime: DockerRuntime, count: number): Promise<Sandbox[]> {
    const created = await Promise.all(
      Array.from({ length: count }, () => runtime.create({ image, hostname: 'intercode', limits, capabilities: DEFAULT_CAPABILITIES })),
    );
    made.push(...created);
    return created;
  }

  describe('on the shared engine (no quota: watched)', () => {
    it('the limit is watched on overlay2, and reset info says so', async () => {
      const [sandbox] = await sandboxes(new DockerRuntime(docker, TEST_SANDBOX_SETTINGS), 1);
      const driver = ((await docker.info()) as { Driver: string }).Driver;
      expect(sandbox!.disk).toMatchObject({ limitBytes: LIMIT, enforcement: driver === 'overlay2' ? 'watched' : driver === 'btrfs' ? 'engine' : 'file-size' });
    });

    it('no single file outgrows the limit, however it is written', async () => {
      const [sandbox] = await sandboxes(new DockerRuntime(docker, TEST_SANDBOX_SETTINGS), 1);
      const shell = await ShellSession.open(sandbox!, { timeoutMs: 30_000 });
      const result = await shell.run(ONE_HUGE_FILE);
      expect(result.output).toMatch(/fallocate=(?!0)\d+/);
      // head is stopped by the file-size limit (EFBIG) or, at the limit, by the watch (disk-limit).
      if (!diskEvent(result)) expect(result.output).toMatch(/head=(?!0)\d+/);
      const listed = await shell.run(SIZES);
      const files = [...listed.output.matchAll(/^(\d+) (\d+) \/(huge|huge2|sparse)$/gm)].map((m) => ({ size: Number(m[1]), held: Number(m[2]) * 512 }));
      expect(files).toHaveLength(3);
      for (const { size, held } of files) {
        expect(size).toBeLessThanOrEqual(LIMIT);
        expect(held).toBeLessThanOrEqual(LIMIT + FS_METADATA_BYTES);
      }
    });

    it('many files written as fast as the shell can: the step says disk-limit, killed or not', async () => {
      const [sandbox] = await sandboxes(new DockerRuntime(docker, TEST_SANDBOX_SETTINGS), 1);
      const shell = await ShellSession.open(sandbox!, { timeoutMs: 30_000 });
      const watch = watchFreeSpace('/var/lib/docker');
      const result = await shell.run(MANY_FILES);
      const fell = watch.stop();
      expect(diskEvent(result)).toMatchObject({ kind: 'disk-limit', limitBytes: LIMIT });
      const killed = !result.output.includes('stopped at 100');
      console.log(`[disk] watched limit ${LIMIT / MiB} MiB, many 200 MB fallocates: host free space fell by at most ${(fell / MiB).toFixed(0)} MiB; ${killed ? 'killed before the loop ended' : 'the loop ended before the kill'}`);
    });

    it('many files past the limit, written at 2 GB/s: the command is killed mid-way and the step says disk-limit', async () => {
      const [sandbox] = await sandboxes(new DockerRuntime(docker, TEST_SANDBOX_SETTINGS), 1);
      const shell = await ShellSession.open(sandbox!, { timeoutMs: 60_000 });
      const result = await shell.run(MANY_FILES_PACED);
      expect(diskEvent(result)).toMatchObject({ kind: 'disk-limit', limitBytes: LIMIT });
      // Killed mid-way: the loop never reached its end (under gVisor the kill may also make a later fallocate fail: `stopped at N`, N < 100).
      expect(result.output).not.toContain('stopped at 100');
      const left = await shell.run('ls / | grep -c "^fill"');
      expect(Number(left.output.trim())).toBeLessThan(100);
    });

    it('the bash env ends the episode truncated (disk-limit), and the next episode is clean', async () => {
      const env = await createBashEnv({ limits, shell: { timeoutMs: 30_000 }, engines: testEngines() });
      try {
        const first = await env.reset({ task: 0 });
        expect(first.info.disk).toEqual({ limitBytes: LIMIT, enforcement: 'watched' });
        const step = await env.step(MANY_FILES);
        expect(step.truncated).toBe(true);
        expect(step.terminated).toBe(false);
        expect(step.info.truncation?.reason).toBe('disk-limit');
        expect(step.observation).toContain('disk limit reached');
        await expect(env.step('ls')).rejects.toThrow(/after the episode ended/);
        await env.reset({ task: 0 });
        const next = await env.step('find / -maxdepth 1 -name "fill*" | wc -l; echo ok');
        expect(next.observation).toBe('0\nok\n');
        expect(next.info.events).toEqual([]);
      } finally {
        await env.close();
      }
    });

    it('files below a folder chain deeper than PATH_MAX count: the episode ends truncated (disk-limit)', async () => {
      // Past PATH_MAX no path names them: a walk by path would skip them and the limit would not hold.
      // Below / (the image's files): under gVisor /tmp is a tmpfs of the sandbox's own, in its memory.
      const env = await createBashEnv({ limits, shell: { timeoutMs: 60_000 }, engines: testEngines() });
      try {
        await env.reset({ task: 0 });
        const step = await env.step(`python3 -c "import os\nos.chdir('/')\nfor _ in range(1500): os.mkdir('dd'); os.chdir('dd')\nfor i in range(3):\n    fd = os.open(f'deep{i}', os.O_CREAT | os.O_WRONLY)\n    os.posix_fallocate(fd, 0, 200 * 2**20)\n    os.close(fd)"`);
        expect(step.truncated, step.observation).toBe(true);
        expect(step.info.truncation?.reason).toBe('disk-limit');
      } finally {
        await env.close();
      }
    });

    it('a writer left running after its command is stopped by the disk guard, long before its end', async () => {
      const [sandbox] = await sandboxes(new DockerRuntime(docker, TEST_SANDBOX_SETTINGS), 1);
      const shell = await ShellSession.open(sandbox!, { timeoutMs: 30_000 });
      const started = await shell.run('(for i in $(seq 100); do fallocate -l 200M /bg$i || break; sleep 0.1; done) > /dev/null 2>&1 &');
      expect(started.events).toEqual([]);
      const files = async () => {
        const counted = await shell.run('ls / | grep -c "^bg"');
        expect(counted.output, JSON.stringify(counted)).toMatch(/^\d+\n$/);
        return Number(counted.output);
      };
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      const first = await files();
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      // Nothing writes any more (unguarded, the loop adds ~10 files a second until 100).
      expect(await files()).toBe(first);
      expect(first).toBeLessThan(100);
      console.log(`[disk] a writer left running (200 MB files, 0.1 s apart), limit ${LIMIT / MiB} MiB: stopped after ${first} files`);
    });

    it('a writer left running between steps: the next step ends the episode truncated (disk-limit), and a submit is not scored', async () => {
      const env = await createBashEnv({ limits, shell: { timeoutMs: 30_000 }, engines: testEngines() });
      try {
        for (const last of ['echo next', 'submit']) {
          await env.reset({ task: 0 });
          // Returns at once; the files come after the step has ended, each under the rlimit.
          const started = await env.step('(sleep 0.5; for i in 1 2 3; do fallocate -l 200M /bg$i; done) > /dev/null 2>&1 &');
          expect(started.truncated).toBe(false);
          await new Promise((resolve) => setTimeout(resolve, 2_500));
          const step = await env.step(last);
          expect(step.truncated, last).toBe(true);
          expect(step.reward).toBe(0);
          expect(step.info.truncation?.reason).toBe('disk-limit');
          expect(step.info.events.find((e) => e.kind === 'disk-limit')).toMatchObject({ limitBytes: LIMIT });
        }
      } finally {
        await env.close();
      }
    });

    it('the Python env, whose session does not watch the disk: files written past the limit end the episode truncated (disk-limit)', async () => {
      const env = await createPythonEnv({ limits, session: { timeoutMs: 30_000 }, engines: testEngines() });
      try {
        await env.reset({ task: 0 });
        const step = await env.step('import os\nfor i in range(3):\n    fd = os.open(f"/py{i}", os.O_CREAT | os.O_WRONLY)\n    os.posix_fallocate(fd, 0, 200 * 2**20)\n    os.close(fd)');
        expect(step.truncated).toBe(true);
        expect(step.info.truncation?.reason).toBe('disk-limit');
        await expect(env.step('1')).rejects.toThrow(/after the episode ended/);
      } finally {
        await env.close();
      }
    });

    it('8 sandboxes each writing one 20 GB file leave the host within the sum of the limits', async () => {
      const all = await sandboxes(new DockerRuntime(docker, TEST_SANDBOX_SETTINGS), 8);
      const shells = await Promise.all(all.map((s) => ShellSession.open(s, { timeoutMs: 60_000 })));
      const watch = watchFreeSpace('/var/lib/docker');
      await Promise.all(shells.map((shell) => shell.run('head -c 20G /dev/zero > /huge; fallocate -l 20G /huge2')));
      const fell = watch.stop();
      // What the sandboxes hold, layer by layer (the host's free space also moves with the
      // other users of this disk: it is printed, not asserted).
      const layers = await Promise.all(
        all.map(async (s) => treeBytes(((await docker.getContainer(s.id).inspect()).GraphDriver.Data as unknown as { UpperDir: string }).UpperDir)),
      );
      const held = layers.reduce((a, b) => a + b, 0);
      console.log(`[disk] 8 watched sandboxes × one 20 GB file: their layers hold ${(held / MiB).toFixed(0)} MiB; host free space fell by at most ${(fell / MiB).toFixed(0)} MiB (limits' sum ${(8 * LIMIT) / MiB} MiB)`);
      for (const bytes of layers) expect(bytes).toBeLessThanOrEqual(LIMIT + MiB);
    });
  });

  const noBtrfs = btrfsDataRootUnavailable() ?? secondDockerdUnavailable();
  describe.skipIf(!IN_CI && noBtrfs !== undefined)('on an engine whose data root is btrfs (engine-enforced)', () => {
    let root: BtrfsDataRoot;
    let second: SecondDockerd;
    let runtime: DockerRuntime;

    beforeAll(async () => {
      if (noBtrfs) throw new Error(`cannot make a btrfs engine here: ${noBtrfs}`);
      root = await createBtrfsDataRoot({ dir: await mkdtemp('/tmp/ic-btrfs-'), sizeBytes: 24 * 1024 ** 3 });
      second = await SecondDockerd.create({ dataRoot: root.mountPoint, storageDriver: 'btrfs' });
      await second.start();
      const docker2 = await connectEngine(second.endpoint, 5_000);
      await transferImage({ endpoint: defaultEndpoint(), docker }, { endpoint: second.endpoint, docker: docker2 }, image, () => undefined);
      // This engine has runc only, whatever INTERCODE_RUNTIME says for the main one.
      runtime = new DockerRuntime(docker2, { ociRuntime: 'runc' });
    }, 600_000);

    afterAll(async () => {
      await Promise.all(made.splice(0).map((s) => s.destroy().catch(() => undefined)));
      await second?.remove();
      await root?.remove();
      if (root) {
        expect(spawnSync('losetup', ['-j', root.imageFile], { encoding: 'utf8' }).stdout).toBe('');
        expect(readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain(root.mountPoint);
        await rm(dirname(root.imageFile), { recursive: true, force: true });
      }
    }, 120_000);

    it('the engine holds the limit: writes past it fail with "Disk quota exceeded"', async () => {
      const [sandbox] = await sandboxes(runtime, 1);
      expect(sandbox!.disk).toMatchObject({ limitBytes: LIMIT, enforcement: 'engine' });
      const shell = await ShellSession.open(sandbox!, { timeoutMs: 60_000 });
      const result = await shell.run(`${MANY_FILES} 2>&1; du -sb / 2>/dev/null | tail -1`);
      expect(result.output).toMatch(/[Dd]isk quota exceeded/);
      expect(result.output).not.toContain('stopped at 100');
    });

    it('8 sandboxes each trying 20 GB leave the engine\'s disk and the host within the sum of the limits; the next sandbox is clean', async () => {
      const all = await sandboxes(runtime, 8);
      const shells = await Promise.all(all.map((s) => ShellSession.open(s, { timeoutMs: 120_000 })));
      const engineDisk = watchFreeSpace(root.mountPoint);
      const host = watchFreeSpace(root.imageFile.replace(/\/[^/]+$/, ''));
      await Promise.all(shells.map((shell) => shell.run(`${MANY_FILES}; head -c 20G /dev/zero > /huge`)));
      const engineFell = engineDisk.stop();
      const hostFell = host.stop();
      console.log(`[disk] 8 btrfs sandboxes × 20 GB: engine disk fell by ${(engineFell / MiB).toFixed(0)} MiB, host by ${(hostFell / MiB).toFixed(0)} MiB (limits' sum ${(8 * LIMIT) / MiB} MiB)`);
      // btrfs metadata (kept twice, DUP profile) comes on top of the data the qgroups count.
      expect(engineFell).toBeLessThan(8 * (LIMIT + 64 * MiB));
      expect(hostFell).toBeLessThan(8 * (LIMIT + 64 * MiB));
      const [fresh] = await sandboxes(runtime, 1);
      const shell = await ShellSession.open(fresh!);
      expect((await shell.run('find / -maxdepth 1 -name "fill*" -o -maxdepth 1 -name "huge*" | wc -l; head -c 10M /dev/zero > /ok && echo written')).output).toBe('0\nwritten\n');
    });
  });
});
