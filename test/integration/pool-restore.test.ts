/**
 * The warm pool's in-place restore in real sandboxes: after an agent does its worst, a
 * restored sandbox is indistinguishable from a new one (files with their metadata,
 * processes, IPC objects, /dev, the bind-mounted /etc files); and pooled envs under random
 * `docker kill`s end every episode scored or truncated with its cause, leaving nothing.
 */
import { workspaceOf } from '../setup/fork-observer.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createBashEnvs } from '../../envs/bash/index.js';
import type { BashEnv } from '../../envs/bash/bash-env.js';
import { FileProbe } from '../../envs/bash/file-probe.js';
import { goldText } from '../../src/datasets/index.js';
import { InPlaceRestorer } from '../../src/pool/reuse/in-place-restore.js';
import { diffAgainstReference, readableLayers, referenceView } from '../../src/sandbox/docker/layer-diff.js';
import type { Workspace, WorkspaceFactory } from '../../src/pool/types.js';
import { loadCluster } from '../../src/sandbox/kubernetes/cluster.js';
import { EngineSet } from '../../src/sandbox/backends/engine-set.js';
import { pooledVecEnv } from '../../src/vec/make-vec-env.js';
import { dockerTestFile, gvisorGap, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { kubernetesTestFile, requireCluster, skipWithoutCluster } from '../setup/kubernetes.js';

const { testRun, engine } = await dockerTestFile();
const cluster = await kubernetesTestFile(testRun);

/**
 * Everything an episode could leave behind, as text: every path with type, mode, owner,
 * size (not for directories: ext4 never shrinks one) and mtime to the second (what tar
 * keeps). Not compared: the mtimes of what the engine makes per sandbox, which carry its
 * creation time, so two new sandboxes differ there too (`created`). On Docker: the mount
 * points (/, /etc, /run, /usr/sbin, the bind-mounted /etc/hostname; without network
 * /etc/hosts and /etc/resolv.conf stay the engine's empty placeholders). On Kubernetes
 * (dockershim): also /.dockerenv, /etc/mtab and the kubelet's /etc files (emptied at the
 * pod's start, as Docker's are).
 */
function snapshotScript(created: readonly string[], hosts: string): string {
  const zeroed = created.map((p) => `$1 == "${p}"`).join(' || ');
  return [
    `find / -xdev \\( -path /proc -o -path /sys -o -path /dev -o -path /run/intercode \\) -prune -o -printf '%p %y %m %U %G %s %Ts %l\\n' | awk '$2 == "d" { $6 = 0 } ${zeroed} { $7 = 0 } 1' | LC_ALL=C sort | md5sum`,
    'cd /testbed && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 md5sum | md5sum',
    hosts,
    'md5sum /etc/hostname /etc/resolv.conf',
    'ls -A /dev /dev/shm',
    'ipcs -m | tail -n +4',
    'n=0; for d in /proc/[0-9]*; do n=$((n+1)); done; echo processes $n',
  ].join('; ');
}

/** The runtimes the restore tests run on, each with how to kill a sandbox from outside. */
const RUNTIMES = [
  {
    name: 'Docker',
    skip: skipWithoutEngine(engine, 'pool restore tests'),
    engines: () => (requireEngine(engine), EngineSet.local()),
    snapshot: snapshotScript(['/', '/etc', '/etc/hostname', '/etc/hosts', '/etc/resolv.conf', '/run', '/usr/sbin'], 'md5sum /etc/hosts'),
    kill: async (id: string) => {
      await requireEngine(engine).getContainer(id).kill().catch(() => undefined);
    },
    left: async () => (await requireEngine(engine).listContainers({ all: true, filters: { label: [`io.intercode-ts.test=${testRun}`] } })).map((c) => c.Id),
  },
  {
    name: 'Kubernetes',
    skip: skipWithoutEngine(engine, 'pool restore tests') || skipWithoutCluster(cluster, 'pool restore tests'),
    engines: () => (requireCluster(cluster).close(), new EngineSet([{ endpoint: 'k8s', weight: 1 }])),
    snapshot: snapshotScript(
      ['/', '/.dockerenv', '/etc', '/etc/hostname', '/etc/hosts', '/etc/mtab', '/etc/resolv.conf', '/run', '/run/secrets', '/run/secrets/kubernetes.io'],
      "md5sum /etc/hosts; stat -c '%a %u %g' /etc/hosts /etc/resolv.conf /etc/hostname",
    ),
    kill: async (id: string) => {
      const k = await loadCluster();
      await k.core.deleteNamespacedPod({ name: id, namespace: k.namespace, gracePeriodSeconds: 0 }).catch(() => undefined);
    },
    left: async () => {
      const k = await loadCluster();
      return (await k.core.listNamespacedPod({ namespace: k.namespace, labelSelector: `io.intercode-ts.test=${testRun}` })).items.filter((p) => !p.metadata?.deletionTimestamp).map((p) => p.metadata!.name!);
    },
  },
];

/** Writes all over the root file system (a sandbox after it is never restored in place). */
const DESTRUCTIVE = [
  'rm -rf /testbed/src /usr/share/doc',
  'echo extra > /etc/extra.conf; echo 10.1.2.3 evil >> /etc/hosts; chmod 600 /etc/hosts; rm /etc/resolv.conf',
  'find /usr/share/zoneinfo -type f -exec touch -d 2001-01-01 {} +',
  'chmod 700 /testbed; touch -d 2001-01-01 /testbed/README.md; echo changed >> /testbed/LICENSE',
  'mkdir -p /root/.cache/deep/er && echo x > /root/.cache/deep/er/f; ln -s / /testbed/rootlink',
  'echo shm > /dev/shm/x; echo dev > /dev/extra; ipcmk -M 4096 >/dev/null',
  'rm -rf /testbed/docs && mkdir /testbed/docs && echo new > /testbed/docs/only.md',
  'rm -f /etc/issue && mkdir -p /etc/issue/sub && echo x > /etc/issue/sub/f',
  'mkdir -p /opt/a/b /opt/a-b && touch /opt/a/b/f /opt/a-b/g; mkdir /tmp/many && (cd /tmp/many && seq 20000 | xargs touch)',
  '(sleep 1000 &) ; nohup sleep 999 >/dev/null 2>&1 &',
].join('\n');

/** What an episode can change outside the root file system: processes, /dev, IPC objects, the mounted /etc/hostname (64 MiB: the host must not read it whole). */
const OUTSIDE_THE_ROOT_FILE_SYSTEM = [
  'head -c 64M /dev/zero > /etc/hostname; chmod 640 /etc/hostname; chown 1:2 /etc/hostname',
  'echo shm > /dev/shm/x; echo dev > /dev/extra; ipcmk -M 4096 >/dev/null',
  'cat /testbed/README.md /etc/passwd > /dev/null; ls -laR /testbed > /dev/null',
  '(sleep 1000 &) ; nohup sleep 999 >/dev/null 2>&1 &',
  // Named as the sandbox's own idle process, which every kill spares: the agent's shell's child, and an orphan (init's).
  '(exec -a intercode-idle sleep 998) & (exec -a intercode-idle sleep 997 &)',
].join('\n');

for (const target of RUNTIMES) describe.skipIf(target.skip)(`warm pool restore in place on ${target.name}`, () => {
  let engines: EngineSet;
  let envs: BashEnv[];
  let factory: WorkspaceFactory;
  beforeAll(async () => {
    engines = target.engines();
    envs = await createBashEnvs({ engines }, 4);
    factory = envs[0]!.workspaceFactory();
  }, 300_000);
  afterAll(async () => {
    await Promise.all((envs ?? []).map((env) => env.close()));
    engines?.close();
  });

  const snapshot = async (w: Workspace) => (await w.control.run(target.snapshot)).output;

  // The mounted /etc files are put back from the host where it can reach them (a local engine, as root), else by the sandbox's shell.
  it.skipIf(gvisorGap('the in-place restore is not supported under runsc; pooled envs replace used sandboxes there (defaultCleanMode)')).each(['host', 'sandbox'])('a restored sandbox is indistinguishable from a new one, and its agent shell is new (/etc files put back by the %s); one whose root file system was written is not restored in place', async (etcBy) => {
    const restorer = new InPlaceRestorer(factory);
    const [used, written, fresh] = await Promise.all([factory.create(), factory.create(), factory.create()]);
    // A host that cannot reach the /etc files: the sandbox's outside view but for them (a sandbox without one puts them back by its shell anyway).
    for (const w of etcBy === 'sandbox' ? [used, written] : []) {
      const seen = w.sandbox.fromHost;
      if (seen) Object.defineProperty(w.sandbox, 'fromHost', { value: { ...seen, fileOf: async () => undefined } });
    }
    if (etcBy === 'host' && target.name === 'Docker' && process.getuid?.() === 0) expect(await used.sandbox.fromHost?.fileOf('/etc/hostname')).toMatch(/^\/.*hostname$/);
    try {
      await used.runner.run('cd /tmp && export LEFT=over');
      const done = await used.runner.run(OUTSIDE_THE_ROOT_FILE_SYSTEM);
      expect(done.exitCode).toBe(0);
      expect(await snapshot(used)).not.toBe(await snapshot(fresh));
      expect(await restorer.restore(used)).toEqual({ clean: true });
      expect(await snapshot(used)).toBe(await snapshot(fresh));
      const shell = await used.runner.run('echo "[$LEFT]" $PWD');
      expect(shell.output).toBe('[] /\n');
      // Restoring again (nothing changed since) is a no-op that keeps it identical.
      expect(await restorer.restore(used)).toEqual({ clean: true });
      expect(await snapshot(used)).toBe(await snapshot(fresh));
      // A written root file system cannot be made the image's again from inside (docs/fidelity.md): the pool replaces it.
      expect((await written.runner.run(DESTRUCTIVE)).exitCode).toBe(0);
      expect(await restorer.restore(written)).toEqual({ clean: false, why: expect.stringMatching(/^its writable layer is not a new sandbox's: [+-]\//) });
    } finally {
      await Promise.all([factory.destroy(used), factory.destroy(written), factory.destroy(fresh)]);
      await restorer.close();
    }
  });

  // An agent may replace the programs a restore runs in its sandbox (rm, tar): a fake tar
  // that exits 0 "unpacks" nothing, and the next episode would find the fake tar, the
  // changed testbed and the added files. Where the layers can be read from outside, the
  // restore is checked there and such a sandbox is not reused; elsewhere (a cluster, an
  // engine this process cannot read) the restore trusts the sandbox's tools: docs/security.md.
  it.skipIf(target.name !== 'Docker' || gvisorGap('the in-place restore is not supported under runsc; pooled envs replace used sandboxes there (defaultCleanMode)'))('a sandbox whose rm and tar the agent replaced is not reused', async (context) => {
    const restorer = new InPlaceRestorer(factory);
    const [used, fresh] = await Promise.all([factory.create(), factory.create()]);
    try {
      if ((await used.sandbox.fromHost?.changes(fresh.sandbox)) === undefined) {
        context.skip('this process cannot read the engine\'s layers (run as root, local engine): the restore cannot be checked from outside');
      }
      const fake = "printf '#!/bin/sh\\nexit 0\\n' > /tmp/fake && chmod 755 /tmp/fake";
      const done = await used.runner.run(`echo changed >> /testbed/README.md; echo new > /testbed/added; ${fake}; cp /tmp/fake /usr/bin/rm; cp /tmp/fake /usr/bin/tar`);
      expect(done.exitCode).toBe(0);
      expect((await used.runner.run('tar --version; rm --version; echo $?')).output).toBe('0\n');
      expect(await restorer.restore(used)).toEqual({ clean: false, why: expect.stringMatching(/^its writable layer is not a new sandbox's: \+\//) });
    } finally {
      await Promise.all([factory.destroy(used), factory.destroy(fresh)]);
      await restorer.close();
    }
  });

  // A reference is read once and kept (it never changes): what was read while it ran still
  // stands after it stops; a path never read, once it stopped, fails the comparison rather than
  // reading an unmounted root (where every path of the sandbox would look added).
  it.skipIf(target.name !== 'Docker')('a comparison with a reference stopped since reuses what it read, and fails where it would read it now', async (context) => {
    const [used, reference] = await Promise.all([factory.create(), factory.create()]);
    try {
      const before = await used.sandbox.fromHost?.changes(reference.sandbox);
      if (before === undefined) context.skip("this process cannot read the engine's layers (run as root, local engine)");
      expect(before).toEqual([]);
      expect((await used.runner.run('echo changed >> /testbed/README.md')).exitCode).toBe(0);
      const changed = [{ path: '/testbed/README.md', kind: 'modified' }];
      expect(await used.sandbox.fromHost?.changes(reference.sandbox)).toEqual(changed);
      await target.kill(reference.sandbox.id);
      expect(await used.sandbox.fromHost?.changes(reference.sandbox)).toEqual(changed);
      expect((await used.runner.run('echo new > /opt/unread')).exitCode).toBe(0);
      await expect(used.sandbox.fromHost!.changes(reference.sandbox)).rejects.toThrow(/comparing its files failed/);
    } finally {
      await Promise.all([factory.destroy(used), factory.destroy(reference)]);
    }
  });

  // An episode names the paths its layer holds: a hundred thousand new names per episode must
  // not grow what the host keeps of the reference (only paths the reference has are kept).
  it.skipIf(target.name !== 'Docker')('what a diff keeps of its reference does not grow with the names an episode makes', async (context) => {
    const [used, reference] = await Promise.all([factory.create(), factory.create()]);
    try {
      const layersOf = async (id: string) => readableLayers((await requireEngine(engine).getContainer(id).inspect()).GraphDriver);
      const [mine, theirs] = await Promise.all([layersOf(used.sandbox.id), layersOf(reference.sandbox.id)]);
      if (!mine || !theirs) context.skip("this process cannot read the engine's layers (run as root, local engine)");
      for (const batch of ['a', 'b']) {
        // Straight into a folder the image has (inside an added folder, nothing is looked up in the reference).
        expect((await used.runner.run(`cd /tmp && seq 5000 | sed 's/^/${batch}/' | xargs touch`)).exitCode).toBe(0);
        const changes = await diffAgainstReference(mine!, theirs!, () => false);
        expect(changes.filter((c) => c.path.startsWith('/tmp/') && c.kind === 'added')).toHaveLength(batch === 'a' ? 5000 : 10000);
        expect(referenceView(theirs!).keptPaths).toBeLessThan(50);
      }
    } finally {
      await Promise.all([factory.destroy(used), factory.destroy(reference)]);
    }
  });

  it('a restored workspace scores an episode that changed nothing without running git, and every episode as a new sandbox would', async () => {
    const [pooled, plain] = await createBashEnvs({ engines }, 2);
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
        [readOnly, goldText(pooled!.tasks[readOnly]!)],
        [readOnly, 'ls -la /testbed'],
      ];
      const changesNothing = new Set([0, 2, 4, 5, 6, 7]);
      const rewards: number[] = [];
      const gitRunsPerEpisode: number[] = [];
      const restored: boolean[] = [];
      for (const [task, action] of episodes) {
        const before = gitRuns.mock.calls.length;
        await pooled!.reset({ task });
        restored.push(workspaceOf(pooled).reference !== undefined);
        await pooled!.step(action);
        rewards.push((await pooled!.step('submit')).reward);
        gitRunsPerEpisode.push(gitRuns.mock.calls.length - before);
      }
      const expected: number[] = [];
      for (const [task, action] of episodes) expected.push(await play(plain!, task, action));
      expect(rewards).toEqual(expected);
      expect([rewards[0], rewards[1], rewards[4]]).toEqual([1, 1, 1]);
      // New sandboxes (the pool's, and those replacing a sandbox an episode wrote to) have no
      // reference: git runs. A restored one runs git only when something changed, and the
      // first untouched episode reads the reference's status, once.
      const untouchedRestored = episodes.map((_, i) => i).filter((i) => restored[i] && changesNothing.has(i));
      expect(untouchedRestored.length).toBeGreaterThan(1);
      expect(untouchedRestored.map((i) => gitRunsPerEpisode[i])).toEqual(untouchedRestored.map((_, k) => (k === 0 ? 1 : 0)));
      for (const i of episodes.map((_, i) => i).filter((i) => !restored[i] || !changesNothing.has(i))) expect(gitRunsPerEpisode[i], `episode ${i}`).toBe(1);
    } finally {
      gitRuns.mockRestore();
      await vec.close();
      await plain!.close();
    }
  });

  // The scorer's `git status` and `md5sum` run in the episode's sandbox, as InterCode's did:
  // an agent could make them say "nothing changed" (a commit, a fake git, an ignore file).
  // Where the layers can be read from outside, such an episode is not scored.
  it.skipIf(target.name !== 'Docker')('an episode that changes what the scorer relies on is truncated (state-unreadable); user git configuration and a git in /usr/local are not used', async (context) => {
    const [pooled] = await createBashEnvs({ engines }, 1);
    const env = pooled!;
    const { vec } = pooledVecEnv([env], { autoreset: 'disabled', pool: { minIdle: 1 } });
    const workspace = () => workspaceOf(env);
    try {
      const task = env.tasks.findIndex((t) => goldText(t).startsWith('find /testbed -type f | wc -l'));
      const gold = goldText(env.tasks[task]!);
      /** Plays `action` in a restored workspace (one with a reference, read from outside). */
      const play = async (action: string) => {
        for (let tries = 0; ; tries++) {
          await env.reset({ task });
          if (workspace().reference) break;
          expect(tries, 'a restored workspace within 4 episodes').toBeLessThan(4);
          await env.step('submit');
        }
        if ((await workspace().sandbox.fromHost?.changes(workspace().reference!)) === undefined) {
          context.skip("this process cannot read the engine's layers (run as root, local engine): nothing to check from outside");
        }
        const acted = await env.step(action);
        expect(acted.info.exitCode, acted.observation).toBe(0);
        await env.step(gold);
        return env.step('submit');
      };
      const fake = "printf '#!/bin/sh\\nexit 0\\n'";
      const hidden = [
        ['a commit', 'rm -rf /testbed/src && cd / && git add -A && git -c user.name=a -c user.email=a@b commit -qm hide', /\(\/\.git[/:]/],
        ['a fake git', `rm -rf /testbed/src && ${fake} > /usr/bin/git`, /\(\/usr\/bin\/git: modified\)/],
        ['an ignore file', "rm -rf /testbed/src && printf '*\\n' > /testbed/.gitignore", /\(\/testbed\/\.gitignore: added\)/],
        ['a preloaded library', 'touch /etc/ld.so.preload', /\(\/etc\/ld\.so\.preload: added\)/],
        ['a file marked assume-unchanged', 'echo changed >> /testbed/README.md && cd / && git update-index --assume-unchanged testbed/README.md', /^the index marks 1 file\(s\) so that git status passes over them \(h testbed\/README\.md\)$/],
      ] as const;
      for (const [what, action, instrument] of hidden) {
        const submit = await play(action);
        expect(submit, what).toMatchObject({ reward: 0, terminated: false, truncated: true });
        expect(submit.info.truncation?.reason, what).toBe('state-unreadable');
        expect(submit.info.truncation?.message, what).toMatch(instrument);
      }

      // Scored as usual: the agent's own `git status` (which may refresh the index), and a
      // user configuration and a `git` in /usr/local, which the probe does not use.
      expect((await play('cd / && git status >/dev/null && git log --oneline | wc -l')).reward).toBe(1);
      const plain = await play('echo x > /testbed/new');
      const disguised = await play(`echo x > /testbed/new && printf '[status]\\n\\tshowUntrackedFiles = no\\n' > /root/.gitconfig && ${fake} > /usr/local/bin/git && chmod 755 /usr/local/bin/git`);
      expect(disguised.truncated).toBe(false);
      expect(disguised.info.score?.details.diff_extra).toEqual(plain.info.score?.details.diff_extra);
      expect(disguised.info.score?.details.diff_extra).toContainEqual(['testbed/new', '??']);
    } finally {
      await vec.close();
    }
  });

  it(`pooled envs under random ${target.name} kills: every episode is scored or truncated with its cause`, async () => {
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
            const id = workspaceOf(env).sandbox.id;
            await target.kill(id);
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
    expect(await target.left()).toEqual([]);
  }, 300_000);
});
