/**
 * Episode roots' pool folders (beside the engine's data root, one per pool, named after the
 * process that made it) that a run left when it died are removed by `intercode cleanup` and
 * the crash reaper; a live process's folder is kept. Before, 76 such folders were found on the
 * project's VM after a day of test runs.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { removeOrphanPoolFolders } from '../../src/sandbox/roots/root-pool.js';
import { dockerTestFile, requireEngine, skipWithoutEngine } from '../setup/docker.js';

const { engine } = await dockerTestFile();

describe.skipIf(skipWithoutEngine(engine, 'episode-root pool folders'))('pool folders of dead runs', () => {
  it('are removed; a live process\'s folder is kept', async () => {
    const docker = requireEngine(engine);
    const info = (await docker.info()) as { DockerRootDir?: string };
    const base = join(dirname(info.DockerRootDir ?? '/var/lib/docker'), 'intercode-roots');
    // A process that has ended: its id names no live process (a test a second later would be
    // fooled only by an id reused meanwhile).
    const gone = spawnSync('sh', ['-c', 'echo $$'], { encoding: 'utf8' }).stdout.trim();
    const dead = join(base, `${gone}-${randomBytes(8).toString('hex')}`);
    const live = join(base, `${process.pid}-${randomBytes(8).toString('hex')}`);
    for (const dir of [dead, live]) {
      mkdirSync(join(dir, 'roots', 'a'.repeat(64), 'upper'), { recursive: true });
      writeFileSync(join(dir, 'plan'), 'plan');
    }
    try {
      expect(await removeOrphanPoolFolders(docker)).toBeGreaterThanOrEqual(1);
      expect(existsSync(dead)).toBe(false);
      expect(existsSync(live)).toBe(true);
    } finally {
      rmSync(dead, { recursive: true, force: true });
      rmSync(live, { recursive: true, force: true });
    }
  });
});
