/**
 * Sandboxes kept warm between commands (`--keep-warm`, src/sandbox/docker/keep-warm/warm-sandboxes.ts)
 * on a real engine: a closing pool parks its clean sandboxes and its template, the next
 * process of the same configuration adopts them instead of creating new ones — cleaning
 * each first, whatever was done to it while parked —, two adopters never get the same
 * sandbox, the keeper removes what nobody adopted in time and then exits, crash reaping
 * spares parked sandboxes, and a parked sandbox's control shell is taken over when alive.
 */
import type Docker from 'dockerode';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBashEnvs } from '../../envs/bash/index.js';
import type { BashEnv } from '../../envs/bash/bash-env.js';
import { packagePath } from '../../src/package-path.js';
import { InPlaceRestorer } from '../../src/pool/reuse/in-place-restore.js';
import type { Workspace, WorkspaceFactory } from '../../src/pool/types.js';
import type { ShellSession } from '../../src/sandbox/shell/shell-session.js';
import { cleanup } from '../../src/sandbox/docker/cleanup.js';
import { channelRoot } from '../../src/sandbox/docker/fifo-channel.js';
import { parseContainerName, runName } from '../../src/sandbox/docker/keep-warm/warm-sandboxes.js';
import { processAlive } from '../../src/sandbox/lifecycle/process-alive.js';
import { EngineSet } from '../../src/sandbox/backends/engine-set.js';
import { pooledVecEnv } from '../../src/vec/make-vec-env.js';
import { dockerTestFile, gvisorGap, IN_CI, requireEngine, skipWithoutEngine, testContainers } from '../setup/docker.js';

const { testRun, engine } = await dockerTestFile();

/** Parking needs the compiled keeper (a parked sandbox must expire): `npm run build` makes it. */
const KEEPER = packagePath('dist', 'src', 'sandbox', 'docker', 'keep-warm', 'warm-keeper.js');
const withoutKeeper = !existsSync(KEEPER);
if (withoutKeeper && !IN_CI) console.warn(`skipping keep-warm tests: no compiled keeper at ${KEEPER} (run npm run build)`);
if (withoutKeeper && IN_CI) throw new Error(`keep-warm tests need the compiled keeper at ${KEEPER}: CI builds it (intercode setup)`);

const TTL_MS = 60_000;

/** This test run's containers by what their names say. */
async function named(docker: Docker): Promise<{ id: string; name: ReturnType<typeof parseContainerName> }[]> {
  return (await testContainers(docker, testRun)).map((c) => ({ id: c.Id, name: parseContainerName(c.Names?.[0] ?? '') }));
}

async function parkedIds(docker: Docker, role?: 'workspace' | 'template'): Promise<string[]> {
  return (await named(docker)).filter(({ name }) => name.state === 'warm' && (role === undefined || name.role === role)).map(({ id }) => id);
}

/** Runs `script` in a container through the engine, as an outsider would (not through our shells). */
async function outsideExec(docker: Docker, id: string, script: string): Promise<void> {
  const exec = await docker.getContainer(id).exec({ Cmd: ['bash', '-c', script], AttachStdout: false, AttachStderr: false });
  await exec.start({ Detach: true });
  for (let i = 0; i < 100 && (await exec.inspect()).Running; i++) await new Promise((resolve) => setTimeout(resolve, 50));
}

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return check();
}

describe.skipIf(skipWithoutEngine(engine, 'keep-warm tests') || withoutKeeper || gvisorGap('pools replace used sandboxes under runsc: nothing is parked there'))('sandboxes kept warm between commands', () => {
  let docker: Docker;
  let engines: EngineSet;
  let env: BashEnv;
  let factory: WorkspaceFactory;

  beforeAll(async () => {
    docker = requireEngine(engine);
    engines = EngineSet.local();
    [env] = (await createBashEnvs({ engines }, 1)) as [BashEnv];
    factory = env.workspaceFactory();
  }, 300_000);
  afterAll(async () => {
    await env?.close();
    engines?.close();
  });

  it('a closing pool parks its clean sandboxes and its template; the next pool adopts them, cleaned of what was done to them while parked', async () => {
    const play = async (bash: BashEnv, action: string) => {
      await bash.reset({ task: 0 });
      return (await bash.step(action)).observation;
    };
    const [first] = (await createBashEnvs({ engines }, 1)) as [BashEnv];
    const one = pooledVecEnv([first], { autoreset: 'disabled', pool: { minIdle: 2, keepWarmMs: TTL_MS } });
    await play(first, 'echo left > /testbed/left.txt; (sleep 1000 &); export LEFT=over');
    await play(first, 'true');
    await one.vec.close();
    const parked = one.pool.stats().parked;
    expect(parked).toBeGreaterThanOrEqual(2);
    const workspaces = await parkedIds(docker, 'workspace');
    expect(workspaces).toHaveLength(parked);
    const template = await parkedIds(docker, 'template');
    expect(template).toHaveLength(1);
    // Nothing of ours is left running in a parked sandbox but its idle process and the handed-over control shell.
    // One parked sandbox gets its files changed too: that one cannot be made new again in place, and is removed, not adopted.
    const [filesTampered, ...others] = workspaces;
    await outsideExec(docker, filesTampered!, 'echo tampered > /testbed/tampered.txt; rm -f /testbed/README.md; nohup sleep 999 >/dev/null 2>&1 &');
    for (const id of others) await outsideExec(docker, id, 'nohup sleep 999 >/dev/null 2>&1 &');

    const [second] = (await createBashEnvs({ engines }, 1)) as [BashEnv];
    const two = pooledVecEnv([second], { autoreset: 'disabled', pool: { minIdle: 2, keepWarmMs: TTL_MS } });
    try {
      const seen = await play(second, 'ls /testbed/left.txt /testbed/tampered.txt /testbed/README.md 2>&1; pgrep -cf "sleep (999|1000)"; echo "[$LEFT]"');
      expect(seen).toContain("'/testbed/left.txt': No such file or directory");
      expect(seen).toContain("'/testbed/tampered.txt': No such file or directory");
      expect(seen).toMatch(/^\/testbed\/README\.md$/m);
      expect(seen).toMatch(/^0$/m);
      expect(seen).toContain('[]');
      const stats = two.pool.stats();
      expect(stats.adopted).toBeGreaterThanOrEqual(1);
      // The template and the workspaces adopted are this process's now, under its name; none was lost.
      const now = await named(docker);
      const owned = now.filter(({ name }) => name.state === 'run' && name.pid === process.pid).map(({ id }) => id);
      expect(owned).toContain(template[0]);
      expect(others.filter((id) => owned.includes(id)).length).toBeGreaterThanOrEqual(stats.adopted);
      for (const id of others) expect(now.map((c) => c.id)).toContain(id);
      // The pool fills itself in the background: the tampered one is adopted, found unclean and removed, maybe after the first play.
      expect(await until(async () => !(await named(docker)).some((c) => c.id === filesTampered), 30_000)).toBe(true);
      // The gold still scores 1 in an adopted sandbox.
      await second.reset({ task: 0 });
      await second.step(env.tasks[0]!.gold as string);
      expect((await second.step('submit')).reward).toBe(1);
    } finally {
      await two.vec.close();
      await cleanup(docker, { testRun });
    }
  });

  it('of several adopters at once, each parked sandbox goes to exactly one', async () => {
    const workspaces = await Promise.all([factory.create(), factory.create(), factory.create()]);
    const ids = workspaces.map((w) => w.sandbox.id).sort();
    const kept = await Promise.all(workspaces.map((w) => factory.park!(w, 'workspace', TTL_MS)));
    expect(kept).toEqual([true, true, true]);
    const adopted = await Promise.all(Array.from({ length: 6 }, () => factory.adopt!('workspace')));
    const got = adopted.filter((w): w is Workspace => w !== undefined);
    try {
      expect(got.map((w) => w.sandbox.id).sort()).toEqual(ids);
      expect(adopted.filter((w) => w === undefined)).toHaveLength(3);
      // Each is this process's now: named after it, and its control shell answers.
      for (const { id, name } of await named(docker)) if (ids.includes(id)) expect(name).toMatchObject({ state: 'run', pid: process.pid });
      for (const w of got) expect((await w.control.run('echo ok')).output).toBe('ok\n');
    } finally {
      await Promise.all(got.map((w) => factory.destroy(w)));
    }
  });

  it('a parked sandbox hands its control shell to its adopter, and one whose shell died gets a new one', async () => {
    const workspace = await factory.create();
    const pid = (await workspace.control.run('echo $$')).output.trim();
    expect(await factory.park!(workspace, 'workspace', TTL_MS)).toBe(true);
    let adopted = (await factory.adopt!('workspace'))!;
    expect((await adopted.control.run('echo $$')).output.trim()).toBe(pid);
    expect(await factory.park!(adopted, 'workspace', TTL_MS)).toBe(true);
    await outsideExec(docker, adopted.sandbox.id, `kill -9 ${pid}`);
    adopted = (await factory.adopt!('workspace'))!;
    try {
      const now = (await adopted.control.run('echo $$')).output.trim();
      expect(now).toMatch(/^\d+$/);
      expect(now).not.toBe(pid);
    } finally {
      await factory.destroy(adopted);
    }
  });

  it("a parked workspace's unused agent shell is kept by its adopter's restore, not replaced; one of other options is not resumed", async () => {
    const restorer = new InPlaceRestorer(factory);
    const workspace = await factory.create();
    try {
      expect(await restorer.restore(workspace)).toEqual({ clean: true });
      const agentPid = (workspace.runner as ShellSession).pid;
      expect(agentPid).toBeGreaterThan(1);
      expect(await factory.park!(workspace, 'workspace', TTL_MS)).toBe(true);
      const adopted = (await factory.adopt!('workspace'))!;
      expect(adopted.unusedRunnerPid).toBe(agentPid);
      expect(await restorer.restore(adopted)).toEqual({ clean: true });
      expect(adopted.unusedRunnerPid).toBeUndefined();
      expect((await adopted.runner.run('echo $$ "[$LEFT]" $PWD; USED=1')).output).toBe(`${agentPid} [] /\n`);
      // Used now: the next restore replaces it (a new shell, started at the same pinned process id).
      expect(await restorer.restore(adopted)).toEqual({ clean: true });
      expect((await adopted.runner.run('echo $$ "[$USED]"; HANDED=1')).output).toBe(`${agentPid} []\n`);
      // Handed over again, then adopted by an env whose shells get another environment: a new agent shell.
      expect(await factory.park!(adopted, 'workspace', TTL_MS)).toBe(true);
      const [other] = (await createBashEnvs({ engines, shell: { env: { OTHER: '1' } } }, 1)) as [BashEnv];
      const otherFactory = other.workspaceFactory();
      const otherRestorer = new InPlaceRestorer(otherFactory);
      const taken = (await otherFactory.adopt!('workspace'))!;
      try {
        expect(taken.unusedRunnerPid).toBeUndefined();
        expect(await otherRestorer.restore(taken)).toEqual({ clean: true });
        expect((await taken.runner.run('echo "[$HANDED]" $OTHER')).output).toBe('[] 1\n');
        expect((await taken.runner.run('echo $OTHER')).output).toBe('1\n');
      } finally {
        await otherFactory.destroy(taken);
        await otherRestorer.close();
        await other.close();
      }
    } finally {
      await restorer.close();
    }
  });

  it('crash reaping keeps parked sandboxes, and removes one adopted by a process that is gone', async () => {
    const [parked, stolen] = await Promise.all([factory.create(), factory.create()]);
    expect(await factory.park!(parked, 'workspace', TTL_MS)).toBe(true);
    // An adopter that died: its name says a pid that no longer runs on this host.
    const gone = spawnSync('true').pid!;
    expect(processAlive(gone)).toBe(false);
    await docker.getContainer(stolen.sandbox.id).rename({ name: runName('0123456789abcdef', gone) });
    stolen.runner.close();
    stolen.control.close();
    await cleanup(docker, { deadRunsOnly: true });
    const left = (await named(docker)).map(({ id }) => id);
    expect(left).toContain(parked.sandbox.id);
    expect(left).not.toContain(stolen.sandbox.id);
    await cleanup(docker, { testRun, warmOnly: true });
    expect((await named(docker)).map(({ id }) => id)).not.toContain(parked.sandbox.id);
  });

  it('a parked sandbox removed from outside leaves no channel directory behind the next cleanup', async () => {
    const workspace = await factory.create();
    const tag = (workspace.sandbox as { tag?: string }).tag!;
    expect(await factory.park!(workspace, 'workspace', TTL_MS)).toBe(true);
    const dir = join(channelRoot(), `warm-${tag}`);
    expect(existsSync(dir)).toBe(true);
    await docker.getContainer(workspace.sandbox.id).remove({ force: true });
    await cleanup(docker, { deadRunsOnly: true });
    expect(existsSync(dir)).toBe(false);
  });

  it('the keeper removes a parked sandbox when its time is up, then exits; the next parking starts a new one', async () => {
    const lock = join(channelRoot(), '.warm-keeper.pid');
    // Twice from the same process: the second parking comes after the first keeper is gone.
    for (const round of [1, 2]) {
      const workspace = await factory.create();
      const id = workspace.sandbox.id;
      // A time to live longer than the keeper's start: started late (niceness 19 on a busy
      // machine), it would otherwise find the sandbox expired, remove it and exit between two
      // looks at its pid file (seen in CI).
      expect(await factory.park!(workspace, 'workspace', 20_000)).toBe(true);
      expect(await parkedIds(docker)).toContain(id);
      // The keeper runs at the lowest priority: its start-up does not compete with the next command.
      expect(await until(async () => existsSync(lock), 30_000), `round ${round}: keeper started`).toBe(true);
      const keeperPid = Number(readFileSync(lock, 'utf8'));
      const niceness = Number(readFileSync(`/proc/${keeperPid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ')[16]);
      expect(niceness).toBe(19);
      expect(await until(async () => !(await parkedIds(docker)).includes(id), 45_000), `round ${round}: removed`).toBe(true);
      expect(existsSync(join(channelRoot(), `warm-${(workspace.sandbox as { tag?: string }).tag}`))).toBe(false);
      // It exits once nothing is parked on the host (another user's parked sandboxes would keep it).
      const othersParked = (await docker.listContainers({ all: true, filters: { name: ['^/intercode-warm\\.'] } })).length > 0;
      if (!othersParked) {
        const keeper = existsSync(lock) ? Number(readFileSync(lock, 'utf8')) : undefined;
        expect(await until(async () => !existsSync(lock) && (keeper === undefined || !processAlive(keeper)), 15_000), `round ${round}: keeper gone`).toBe(true);
      }
    }
  }, 180_000);
});
