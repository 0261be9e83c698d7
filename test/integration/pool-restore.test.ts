/**
 * The warm pool's in-place restore in real sandboxes: after an agent does its worst, a
 * restored sandbox is indistinguishable from a new one (files with their metadata,
 * processes, IPC objects, /dev, the bind-mounted /etc files); and pooled envs under random
 * `docker kill`s end every episode scored or truncated with its cause, leaving nothing.
 */
import type Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createBashEnvs } from '../../envs/bash/index.js';
import type { BashEnv } from '../../envs/bash/bash-env.js';
import { FileProbe } from '../../envs/bash/file-probe.js';
import { goldText } from '../../src/datasets/index.js';
import { InPlaceRestorer } from '../../src/pool/in-place-restore.js';
import type { Workspace, WorkspaceFactory } from '../../src/pool/types.js';
import { pooledVecEnv } from '../../src/vec/make-vec-env.js';
import { dockerTestFile, gvisorGap, requireEngine, skipWithoutEngine } from '../setup/docker.js';

const { testRun, engine } = await dockerTestFile();

/**
 * Everything an episode could leave behind, as text: every path with type, mode, owner,
 * size (not for directories: ext4 never shrinks one) and mtime to the second (what tar
 * keeps). Not compared: the mount points Docker makes per container (/, /etc, /run, /usr/sbin and the
 * bind-mounted /etc/hostname carry the container's creation time, so two new sandboxes
 * differ there too; without network, /etc/hosts and /etc/resolv.conf are not mounted but
 * stay the engine's empty placeholders, compared without their mtimes, the creation time).
 */
const SNAPSHOT = [
  "find / -xdev \\( -path /proc -o -path /sys -o -path /dev -o -path /run/intercode \\) -prune -o -printf '%p %y %m %U %G %s %Ts %l\\n' | awk '$2 == \"d\" { $6 = 0 } $1 == \"/etc/hosts\" || $1 == \"/etc/resolv.conf\" { $7 = 0 } $1 != \"/\" && $1 != \"/etc\" && $1 != \"/etc/hostname\" && $1 != \"/run\" && $1 != \"/usr/sbin\"' | LC_ALL=C sort | md5sum",
  'cd /testbed && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 md5sum | md5sum',
  'md5sum /etc/hosts /etc/hostname /etc/resolv.conf',
  'ls -A /dev /dev/shm',
  'ipcs -m | tail -n +4',
  'n=0; for d in /proc/[0-9]*; do n=$((n+1)); done; echo processes $n',
].join('; ');

const DESTRUCTIVE = [
  'rm -rf /testbed/src /usr/share/doc',
  'echo extra > /etc/extra.conf; echo 10.1.2.3 evil >> /etc/hosts; chmod 600 /etc/hosts; rm /etc/resolv.conf',
  'chmod 700 /testbed; touch -d 2001-01-01 /testbed/README.md; echo changed >> /testbed/LICENSE',
  'mkdir -p /root/.cache/deep/er && echo x > /root/.cache/deep/er/f; ln -s / /testbed/rootlink',
  'echo shm > /dev/shm/x; echo dev > /dev/extra; ipcmk -M 4096 >/dev/null',
  'rm -rf /testbed/docs && mkdir /testbed/docs && echo new > /testbed/docs/only.md',
  'rm -f /etc/issue && mkdir -p /etc/issue/sub && echo x > /etc/issue/sub/f',
  'mkdir -p /opt/a/b /opt/a-b && touch /opt/a/b/f /opt/a-b/g; mkdir /tmp/many && (cd /tmp/many && seq 20000 | xargs touch)',
  '(sleep 1000 &) ; nohup sleep 999 >/dev/null 2>&1 &',
].join('\n');

describe.skipIf(skipWithoutEngine(engine, 'pool restore tests'))('warm pool restore in place', () => {
  let docker: Docker;
  let envs: BashEnv[];
  let factory: WorkspaceFactory;
  beforeAll(async () => {
    docker = requireEngine(engine);
    envs = await createBashEnvs({}, 4);
    factory = envs[0]!.workspaceFactory();
  });
  afterAll(async () => {
    await Promise.all((envs ?? []).map((env) => env.close()));
  });

  const snapshot = async (w: Workspace) => (await w.control.run(SNAPSHOT)).output;

  it.skipIf(gvisorGap('the in-place restore is not supported under runsc; pooled envs replace used sandboxes there (defaultCleanMode)'))('a restored sandbox is indistinguishable from a new one, and its agent shell is new', async () => {
    const restorer = new InPlaceRestorer(factory);
    const [used, fresh] = await Promise.all([factory.create(), factory.create()]);
    try {
      await used.runner.run('cd /tmp && export LEFT=over');
      const done = await used.runner.run(DESTRUCTIVE);
      expect(done.exitCode).toBe(0);
      expect(await snapshot(used)).not.toBe(await snapshot(fresh));
      expect(await restorer.restore(used)).toBe(true);
      expect(await snapshot(used)).toBe(await snapshot(fresh));
      const shell = await used.runner.run('echo "[$LEFT]" $PWD');
      expect(shell.output).toBe('[] /\n');
      // Restoring again (nothing changed since) is a no-op that keeps it identical.
      expect(await restorer.restore(used)).toBe(true);
      expect(await snapshot(used)).toBe(await snapshot(fresh));
    } finally {
      await Promise.all([factory.destroy(used), factory.destroy(fresh)]);
      await restorer.close();
    }
  });

  it('a restored workspace scores an episode that changed nothing without running git, and every episode as a new sandbox would', async () => {
    const [pooled, plain] = await createBashEnvs({}, 2);
    const { vec } = pooledVecEnv([pooled!], { autoreset: 'disabled', pool: { minIdle: 1 } });
    const gitRuns = vi.spyOn(FileProbe.prototype, 'changes');
    try {
      const readOnly = pooled!.tasks.findIndex((t) => goldText(t).startsWith('find /testbed -type f | wc -l'));
      const writes = pooled!.tasks.findIndex((t) => goldText(t) === 'mkdir /testbed/reports');
      const play = async (env: BashEnv, task: number, action: string) => {
        await env.reset({ task });
        await env.step(action);
        return (await env.step('submit')).reward;
      };
      // Gold outcomes first (each gold runs twice in sandboxes of its own, to check it is deterministic).
      await play(plain!, readOnly, 'true');
      await play(plain!, writes, 'true');
      const episodes: [task: number, action: string][] = [
        [readOnly, goldText(pooled!.tasks[readOnly]!)],
        [writes, goldText(pooled!.tasks[writes]!)],
        [readOnly, 'ls /testbed'],
        // Changes only where git does not look, and a change undone: the sandbox differs, so git runs.
        [writes, 'echo x > /root/note; touch /testbed/t; rm /testbed/t'],
        [readOnly, goldText(pooled!.tasks[readOnly]!)],
        [readOnly, 'cat /testbed/README.md'],
      ];
      const rewards: number[] = [];
      const gitRunsPerEpisode: number[] = [];
      for (const [task, action] of episodes) {
        const before = gitRuns.mock.calls.length;
        rewards.push(await play(pooled!, task, action));
        gitRunsPerEpisode.push(gitRuns.mock.calls.length - before);
      }
      const expected: number[] = [];
      for (const [task, action] of episodes) expected.push(await play(plain!, task, action));
      expect(rewards).toEqual(expected);
      expect([rewards[0], rewards[1], rewards[4]]).toEqual([1, 1, 1]);
      // The pool's two new sandboxes have no reference yet (git runs); restored ones run git only when something
      // changed, and the first untouched episode reads the reference's status, once.
      expect(gitRunsPerEpisode).toEqual([1, 1, 1, 1, 0, 0]);
    } finally {
      gitRuns.mockRestore();
      await vec.close();
      await plain!.close();
    }
  });

  it('pooled envs under random docker kills: every episode is scored or truncated with its cause', async () => {
    const { vec, pool } = pooledVecEnv(envs, { autoreset: 'disabled' });
    const tasks = envs[0]!.tasks;
    const outcomes: { reward: number; truncated: boolean; cause?: string }[] = [];
    let next = 0;
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    await Promise.all(
      envs.map(async (env) => {
        for (let i = next++; i < 40; i = next++) {
          const task = tasks[i % tasks.length]!;
          await env.reset({ task: i % tasks.length });
          const kill = random() < 0.3;
          if (kill) {
            const id = (env as unknown as { workspace: Workspace }).workspace.sandbox.id;
            await docker.getContainer(id).kill().catch(() => undefined);
          }
          const step = await env.step(Array.isArray(task.gold) ? task.gold.join(';') : task.gold);
          const end = step.truncated ? step : await env.step('submit');
          outcomes.push({ reward: end.reward, truncated: end.truncated, ...(end.info.truncation ? { cause: end.info.truncation.reason } : {}) });
        }
      }),
    );
    expect(outcomes).toHaveLength(40);
    for (const o of outcomes) {
      if (o.truncated) expect(o).toMatchObject({ reward: 0, cause: 'sandbox-lost' });
      else expect(o.reward).toBe(1);
    }
    expect(outcomes.some((o) => o.truncated)).toBe(true);
    expect(pool.stats().restored).toBeGreaterThan(0);
    await vec.close();
    // The pool removed every sandbox it made (the envs' gold sandboxes are gone too).
    const left = await docker.listContainers({ all: true, filters: { label: [`io.intercode-ts.test=${testRun}`] } });
    expect(left).toEqual([]);
  });
});
