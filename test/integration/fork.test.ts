/**
 * Checkpoint and fork a live bash episode (issue 29), in a real engine: the observer set of
 * the restore-equivalence test (test/setup/restore-observer.ts) prints the same in the parent
 * at checkpoint time and in every child, but for ctimes and inode numbers of the paths the
 * episode wrote (a copy cannot keep those: docs/fork.md); the agent shell's state (cwd,
 * variables, functions, aliases, options, umask, limits, directory stack, traps, positional
 * parameters) is equal; children are independent; the reward is the parent's; hostile
 * states are carried exactly or refused with a typed error.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBashEnvs } from '../../envs/bash/index.js';
import type { BashEnv } from '../../envs/bash/bash-env.js';
import { CheckpointError } from '../../src/errors.js';
import { cgroupFreezer, type Pausable } from '../../src/sandbox/docker/layer-archive.js';
import { rootFreezer } from '../../src/sandbox/roots/root-sandbox.js';
import { OWNER_LABEL, OWNER_VALUE } from '../../src/labels.js';
import { dockerTestFile, gvisorGap, requireEngine, skipWithoutEngine, TEST_SANDBOX_SETTINGS, testEngines } from '../setup/docker.js';
import { HOSTILE_EPISODES } from '../setup/restore-observer.js';
import { sharedPool, type SharedPool } from '../../src/vec/make-vec-env.js';
import { CONTROL_CHANGE, comparable, differences, differencesAfterControlChange, observeEnv as observe } from '../setup/fork-observer.js';

/** The container's upper directory (overlay2; dockerode types GraphDriver.Data for device-mapper). */
const upperDir = (info: { GraphDriver: { Data: unknown } }): string => String((info.GraphDriver.Data as { UpperDir?: string } | undefined)?.UpperDir);

const { engine } = await dockerTestFile();

/**
 * Image folders the episode replaced: one removed and made again (overlayfs marks it opaque:
 * none of its image entries may show through), one replaced by a file, a file by a folder.
 * (Folders grown past a block: the first hostile episode. Not one grown past four: see
 * docs/fork.md, ext4's extent block.)
 */
const REPLACED_FOLDERS = String.raw`rm -rf /etc/default && mkdir /etc/default && echo only > /etc/default/only && rm -rf /etc/skel && echo file > /etc/skel && rm -f /etc/issue.net && mkdir /etc/issue.net`;

/** Names a hostile episode writes that the lists of paths must carry as they are: a leading dash, glob, quote and bracket characters, a space (a newline is carried too, NUL-separated, but the observer reads lines: such a name cannot be compared here). */
const HOSTILE_NAMES = String.raw`cd /tmp && printf b > ./-rf && printf c > '*' && printf d > "it's [x] y" && rm -f /etc/issue && cd /`;
const skip = skipWithoutEngine(engine, 'fork') || gvisorGap('checkpoints read the writable layer on the host: overlay2 and runc only');

/** The agent shell's state as the agent would print it. */
const SHELL_PROBE = String.raw`builtin printf 'cwd %s\nargs %s\n' "$PWD" "$*"; declare -p FOO BAR NUMS ASSOC RO 2>&1; declare -f greet; declare -F; alias; shopt -p; set +o; umask; ulimit -S -n; ulimit -H -n; dirs -l -p; trap -p; builtin printf 'exported %s\n' "$(env | grep -c ^FOO=)"`;

/** An episode that leaves every kind of file and shell state the checkpoint must carry. */
const EPISODE = [
  'mkdir -p /testbed/work/deep && cd /testbed/work',
  'printf "hello\\n" > a.txt && ln a.txt hard.txt && ln -s a.txt soft && ln -s loop1 loop2 && ln -s loop2 loop1',
  'mkfifo pipe && chmod 000 a.txt && touch -d "2001-02-03 04:05:06.123456789" deep && touch -a -d "1999-01-01 00:00:00.5" hard.txt',
  'rm -f /etc/issue && rm -rf /usr/share/doc/bash && chattr +i /testbed/work/soft 2>/dev/null; dd if=/dev/urandom of=/tmp/blob bs=64k count=4 2>/dev/null',
  'chmod 711 / && chown 1:1 /',
  "export FOO='one two' && BAR=$'multi\\nline' && declare -ai NUMS=(1 2 3) && declare -A ASSOC=([k]=v) && declare -r RO=fixed",
  'greet() { echo "hi $1"; } && alias ll="ls -l" && shopt -s extglob nullglob && set -o pipefail && umask 027 && ulimit -S -n 512',
  "pushd /tmp >/dev/null && pushd /testbed/work/deep >/dev/null && trap 'echo bye' EXIT && set -- a 'b c'",
];

/**
 * The two ways a child is made: a new sandbox from the checkpoint's layer, or (envs on a
 * warm pool, as the CLI's are) the layer laid in place over one of the pool's spares.
 */
const MODES = [
  { name: 'new sandboxes', pooled: false },
  { name: "laid over a warm pool's spares in place", pooled: true },
] as const;

/** Episode roots (the .ci/root-tests pass): the freeze goes through the root's own cgroup. */
const ROOTS = TEST_SANDBOX_SETTINGS.kind === 'episode-roots';
/** One engine set for the file: on episode roots, one pool container serves every env's roots. */
const engines = testEngines();

for (const mode of MODES) describe.skipIf(skip)(`checkpoint and fork a live bash episode: ${mode.name}`, () => {
  let env: BashEnv;
  let shared: SharedPool | undefined;
  beforeAll(async () => {
    requireEngine(engine);
    [env] = (await createBashEnvs({ goldCache: false, engines }, 1)) as [BashEnv];
    if (mode.pooled) shared = sharedPool([env], { pool: { minIdle: 3 } });
  }, 600_000);
  afterAll(async () => {
    await env?.close();
    await shared?.pool.close();
    await shared?.restorer?.close();
  });

  /** An env of the parent's kind to restore into (on the parent's pool, if any), the spares ready. */
  const newChild = async (): Promise<BashEnv> => {
    const [child] = (await createBashEnvs({ goldCache: false, engines }, 1)) as [BashEnv];
    if (shared) child.useWorkspaces(shared.pool);
    return child;
  };

  /** In place: every child took one of the pool's spares (none fell back to a new sandbox). */
  const expectLaidOver = (children: number) => {
    if (shared) expect(shared.pool.stats().lent, 'children laid over spares').toBe(1 + children);
  };

  it('every child answers the observers and the shell probe as the parent did at checkpoint time; children are independent; rewards equal', async () => {
    await env.reset({ task: 0 });
    for (const action of EPISODE) expect((await env.step(action)).info.exitCode, action).toBe(0);
    const checkpoint = await env.checkpoint();
    expect(checkpoint.info.steps).toBe(EPISODE.length);
    expect(checkpoint.info.dropped.processes).toEqual([]);
    const parentSeen = comparable(await observe(env));
    const parentShell = (await env.step(SHELL_PROBE)).observation;
    await shared?.pool.ready(3);
    const children = await Promise.all([0, 1, 2].map(async () => {
      const child = await newChild();
      await child.restore(checkpoint);
      return child;
    }));
    try {
      expectLaidOver(3);
      for (const child of children) {
        expect(differences(parentSeen, comparable(await observe(child)))).toEqual([]);
        expect((await child.step(SHELL_PROBE)).observation).toBe(parentShell);
      }
      // Independent: a write in one child is seen in no other, nor in the parent.
      await children[0]!.step('echo mine > /testbed/only-in-child-0');
      for (const other of [env, children[1]!, children[2]!]) expect((await other.step('ls /testbed/only-in-child-0 2>&1; true')).observation).toMatch(/No such file/);
      // Negative control: the comparison that found the children equal flags one file's mtime changed in one.
      const flagged = await differencesAfterControlChange(parentSeen, children[2]!);
      expect(flagged.some((line) => line.startsWith(`- find\t${CONTROL_CHANGE.path}\t`)), flagged.join('\n')).toBe(true);
      // The reward is the parent's (same task, same state).
      const parentReward = (await env.step('submit')).reward;
      expect((await children[1]!.step('submit')).reward).toBe(parentReward);
    } finally {
      await Promise.all(children.map((child) => child.close()));
      env.releaseCheckpoint(checkpoint);
    }
  }, 1_200_000);

  it('fork(n) gives n episodes with the parent task, steps and state; the parent goes on unchanged', async () => {
    await env.reset({ task: 1 });
    await env.step('cd /tmp && X=42 && echo x > f');
    // Each side observed once: an observation is a read that moves atimes (overlayfs clears a
    // folder's "impure" mark on its first listing, a new ctime, and relatime then moves its atime).
    await shared?.pool.ready(2);
    const children = await env.fork(2);
    try {
      expectLaidOver(2);
      const parentSeen = comparable(await observe(env));
      for (const child of children) {
        expect(child.currentTask).toBe(env.currentTask);
        expect(differences(parentSeen, comparable(await observe(child)))).toEqual([]);
        expect((await child.step('echo "$PWD $X $(cat f)"')).observation).toBe('/tmp 42 x\n');
      }
      expect((await env.step('echo "$PWD $X $(cat f)"')).observation).toBe('/tmp 42 x\n');
    } finally {
      await Promise.all(children.map((child) => child.close()));
    }
  }, 600_000);

  // In place, the shell's state is replayed while the files are laid, and the cd comes after:
  // the state's aliases (expanded), physical mode and OLDPWD must not change where it lands.
  it.each([
    ['an alias named cd (expanded), physical mode, a cwd through a symbolic link', ''],
    ['the same with OLDPWD readonly', ' && declare -r OLDPWD'],
  ])('a shell with %s: the child\'s shell is the parent\'s', async (_, more) => {
    await env.reset({ task: 0 });
    const episode = [
      'mkdir -p /tmp/real/inside && ln -s /tmp/real /tmp/link && cd /tmp/link/inside && cd /tmp && cd /tmp/link/inside',
      `shopt -s expand_aliases && alias cd='echo hijacked' && alias builtin='echo hijacked' && alias declare='echo hijacked' && set -P${more}`,
    ];
    for (const action of episode) expect((await env.step(action)).info.exitCode, action).toBe(0);
    const probe = String.raw`\printf '%s|%s|%s\n' "$PWD" "$OLDPWD" "$(\pwd -P)"; \alias; \set +o | \grep physical; \declare -p OLDPWD`;
    const parentShell = (await env.step(probe)).observation;
    expect(parentShell).toMatch(/^\/tmp\/link\/inside\|\/tmp\|\/tmp\/real\/inside\n/);
    await shared?.pool.ready(1);
    const [child] = await env.fork(1);
    try {
      expectLaidOver(1);
      expect((await child!.step(probe)).observation).toBe(parentShell);
    } finally {
      await child?.close();
    }
  }, 600_000);

  it('previous-episode hostile states (restore-equivalence set) and replaced image folders are carried exactly', async () => {
    for (const episode of [...HOSTILE_EPISODES.slice(0, 4), REPLACED_FOLDERS, HOSTILE_NAMES]) {
      await env.reset({ task: 0 });
      await env.step(episode);
      const checkpoint = await env.checkpoint();
      const parentSeen = comparable(await observe(env));
      await shared?.pool.ready(2);
      const child = await newChild();
      try {
        await child.restore(checkpoint);
        expectLaidOver(1);
        expect(differences(parentSeen, comparable(await observe(child))), episode).toEqual([]);
      } finally {
        await child.close();
        env.releaseCheckpoint(checkpoint);
      }
    }
  }, 1_800_000);

  it.runIf(!mode.pooled)('refuses, with a typed error, what it cannot carry: a socket, a builtin overridden, a 1 GiB file; a released handle', async () => {
    const refusal = async (actions: string[]) => {
      await env.reset({ task: 0 });
      for (const action of actions) await env.step(action);
      return env.checkpoint().then(
        () => undefined,
        (error: unknown) => error,
      );
    };
    const socket = await refusal([`python3 -c "import socket; socket.socket(socket.AF_UNIX).bind('/tmp/sock')"`]);
    expect(socket).toBeInstanceOf(CheckpointError);
    expect((socket as CheckpointError).code).toBe('CHECKPOINT_REFUSED');
    expect((socket as CheckpointError).details.reason).toBe('socket');
    const builtin = await refusal(['declare() { echo fake; }']);
    expect((builtin as CheckpointError).details.reason).toBe('builtin-overridden');
    const big = await refusal(['fallocate -l 1G /tmp/big || dd if=/dev/zero of=/tmp/big bs=1M count=1024 2>/dev/null']);
    expect((big as CheckpointError).details.reason).toBe('too-large');
    await env.reset({ task: 0 });
    const checkpoint = await env.checkpoint();
    env.releaseCheckpoint(checkpoint);
    await expect(env.restore(checkpoint)).rejects.toThrow(/released/);
  }, 600_000);

  it('refuses, with a typed error, a child that would differ outside the layer: /dev modes, /dev/shm, a mount point', async () => {
    for (const action of ['chmod 600 /dev/null', 'echo kept > /dev/shm/x', 'chmod 700 /proc']) {
      await env.reset({ task: 0 });
      expect((await env.step(action)).info.exitCode, action).toBe(0);
      const checkpoint = await env.checkpoint();
      await shared?.pool.ready(2);
      const child = await newChild();
      try {
        const refused = await child.restore(checkpoint).then(() => undefined, (error: unknown) => error);
        expect(refused, action).toBeInstanceOf(CheckpointError);
        expect((refused as CheckpointError).code).toBe('CHECKPOINT_REFUSED');
        expect((refused as CheckpointError).details.reason, action).toBe('not-carried');
        // The child is left without an episode; the parent goes on.
        await expect(child.step('true')).rejects.toThrow(/reset/);
        expect((await env.step('true')).info.exitCode).toBe(0);
      } finally {
        await child.close();
        env.releaseCheckpoint(checkpoint);
      }
    }
  }, 600_000);
});

/** Whether `file` grows within `ms` (a loaded host may not run the writer for a while). */
async function grows(file: string, ms: number): Promise<boolean> {
  const from = statSync(file).size;
  for (const until = Date.now() + ms; Date.now() < until; ) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    if (statSync(file).size > from) return true;
  }
  return false;
}

/** `freezer` stops the writer of `ticks` until thawed. */
async function expectFreezes(freezer: Pausable, ticks: string): Promise<void> {
  expect(await grows(ticks, 10_000), 'the writer runs').toBe(true);
  await freezer.pause();
  try {
    expect(await grows(ticks, 1_000), 'nothing written while frozen').toBe(false);
  } finally {
    await freezer.unpause();
  }
  expect(await grows(ticks, 10_000), 'written again once thawed').toBe(true);
}

/** Waits until `find` returns something (the writer's first write may come a while after the step returns on a loaded host). */
async function waitFor<T>(find: () => Promise<T | undefined> | T | undefined): Promise<T | undefined> {
  for (const until = Date.now() + 10_000; Date.now() < until; ) {
    const found = await find();
    if (found !== undefined) return found;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return undefined;
}

/** A process of the sandbox's own that writes all the time. */
const WRITER = '(while :; do echo x >> /tmp/ticks; sleep 0.01; done) > /dev/null 2>&1 &';

describe.skipIf(skip || ROOTS)("the checkpoint's freeze through the container's cgroup", () => {
  it('stops every process of the sandbox until thawed, and is never given a cgroup that does not name the container', async () => {
    const docker = requireEngine(engine);
    const [env] = (await createBashEnvs({ goldCache: false, engines }, 1)) as [BashEnv];
    try {
      await env.reset({ task: 0 });
      await env.step(WRITER);
      const ids = (await docker.listContainers({ filters: { label: [`${OWNER_LABEL}=${OWNER_VALUE}`] } })).map((c) => c.Id);
      // The sandbox is the container whose upper layer holds /tmp/ticks.
      const inspected = await Promise.all(ids.map((candidate) => docker.getContainer(candidate).inspect()));
      const holdsTicks = (info: (typeof inspected)[number]) => existsSync(join(upperDir(info), 'tmp', 'ticks'));
      const mine = await waitFor(() => inspected.find(holdsTicks));
      expect(mine, 'the sandbox among the managed containers').toBeDefined();
      const ticks = join(upperDir(mine!), 'tmp', 'ticks');
      expect(cgroupFreezer(mine!.State.Pid, 'f'.repeat(64)), "another container's id").toBeUndefined();
      const freezer = cgroupFreezer(mine!.State.Pid, mine!.Id);
      expect(freezer).toBeDefined();
      await expectFreezes(freezer!, ticks);
    } finally {
      await env.close();
    }
  }, 300_000);
});

describe.skipIf(skip || !ROOTS)("the checkpoint's freeze through the episode root's own cgroup", () => {
  it("stops every process of the root until thawed, and finds no freezer for an id that is no root's", async () => {
    const [env] = (await createBashEnvs({ goldCache: false, engines }, 1)) as [BashEnv];
    try {
      await env.reset({ task: 0 });
      await env.step(WRITER);
      // The root is the one whose upper folder (under the pools' folder beside the engine's) holds /tmp/ticks.
      const base = '/var/lib/intercode-roots';
      const uppers = () => readdirSync(base).flatMap((pool) => (existsSync(join(base, pool, 'roots')) ? readdirSync(join(base, pool, 'roots')).map((id) => ({ id, upper: join(base, pool, 'roots', id, 'upper') })) : []));
      const mine = await waitFor(() => uppers().find(({ upper }) => existsSync(join(upper, 'tmp', 'ticks'))));
      expect(mine, 'the root among the pools').toBeDefined();
      expect(rootFreezer('f'.repeat(64)), 'no such root').toBeUndefined();
      expect(rootFreezer('../../..'), 'no root id').toBeUndefined();
      const freezer = rootFreezer(mine!.id);
      expect(freezer).toBeDefined();
      await expectFreezes(freezer!, join(mine!.upper, 'tmp', 'ticks'));
    } finally {
      await env.close();
    }
  }, 300_000);
});
