/**
 * No way out of an episode root (issue 40 item 3): a root's processes run inside a pool
 * container that holds SYS_ADMIN and no seccomp filter, so each way an agent could reach it
 * — or another episode's root — is tried here in a real root, and in a brand-new container
 * of the same spec as the reference: every attack must be refused in the container (so the
 * attack really ran and means something) and must answer the same in the root. The attacks
 * that only a root could allow (the pool behind it, the other roots beside it, its own
 * helper) are checked directly.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBashEnvs } from '../../envs/bash/index.js';
import type { BashEnv } from '../../envs/bash/bash-env.js';
import type { Workspace, WorkspaceFactory } from '../../src/pool/types.js';
import { EngineSet } from '../../src/sandbox/backends/engine-set.js';
import { DockerRuntime } from '../../src/sandbox/docker/docker-runtime.js';
import { channelRoot } from '../../src/sandbox/docker/fifo-channel.js';
import { POOL_LABEL } from '../../src/sandbox/roots/root-pool.js';
import { EpisodeRootRuntime } from '../../src/sandbox/roots/root-runtime.js';
import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS, type Sandbox, type SandboxRuntime, type SandboxSpec } from '../../src/sandbox/types.js';
import { bashTestbedImage, dockerTestFile, gvisorGap, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { rootFolderOf } from '../setup/root-folders.js';

const { engine } = await dockerTestFile();
const skip = skipWithoutEngine(engine, 'episode-root escapes') || gvisorGap('episode roots run under runc only');

/** Raw system calls by number (x86_64), each printed with the error it got: a seccomp refusal is EPERM. */
const SYSCALL_PROBE = String.raw`
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(name, nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
    if r == 0 and name.startswith('clone'):
        os._exit(0)
    if r > 0 and name.startswith('clone'):
        os.waitpid(r, 0)
    print(name, 'ok' if r >= 0 else os.strerror(ctypes.get_errno()))
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x20000, 0x10000000, 0x20000000, 0x40000000
call('clone(CLONE_NEWUSER)', 56, CLONE_NEWUSER | 17, 0, 0, 0, 0)
call('clone(CLONE_NEWNS)', 56, CLONE_NEWNS | 17, 0, 0, 0, 0)
call('clone(CLONE_NEWPID)', 56, CLONE_NEWPID | 17, 0, 0, 0, 0)
call('clone(CLONE_NEWNET)', 56, CLONE_NEWNET | 17, 0, 0, 0, 0)
call('unshare(CLONE_NEWUSER)', 272, CLONE_NEWUSER)
call('unshare(CLONE_NEWNS)', 272, CLONE_NEWNS)
fd = os.open('/proc/1/ns/mnt', os.O_RDONLY)
call('setns(pid 1 mnt)', 308, fd, 0)
call('mount', 165, 0, 0, 0, 0, 0)
call('umount2', 166, 0, 0)
call('pivot_root', 155, 0, 0)
call('open_by_handle_at', 304, -1, 0, 0)
call('keyctl', 250, 0, -3, 0)
call('add_key', 248, 0, 0, 0, 0, 0)
call('bpf', 321, 0, 0, 0)
call('perf_event_open', 298, 0, 0, -1, -1, 0)
call('init_module', 175, 0, 0, 0)
call('finit_module', 313, -1, 0, 0)
call('kexec_load', 246, 0, 0, 0, 0)
call('reboot', 169, 0, 0, 0, 0)
call('iopl', 172, 3)
call('ioperm', 173, 0, 1, 1)
call('swapon', 167, 0, 0)
call('acct', 163, 0)
call('settimeofday', 164, 0, 0)
call('sethostname', 170, 0, 0)
call('setdomainname', 171, 0, 0)
call('userfaultfd', 323, 0)
call('lookup_dcookie', 212, 0, 0, 0)
`;

/** Each attack run in a new container and in a new root: the container must refuse it (`refused`), the root must answer the same. */
const ATTACKS: { name: string; script: string; refused: RegExp }[] = [
  { name: 'raw system calls that make namespaces, mount, load code or reach the kernel', script: heredoc('python3 -', SYSCALL_PROBE), refused: /^(?:.+ Operation not permitted\n){28}$/ },
  { name: 'mount a tmpfs, a cgroup hierarchy (release_agent) and proc again', script: 'mkdir -p /tmp/m; mount -t tmpfs t /tmp/m; mount -t cgroup -o memory cgroup /tmp/m; mount -t proc proc /tmp/m; echo rc=$?', refused: /permission denied[\s\S]*rc=32/i },
  { name: 'unmount /proc and the masked paths', script: 'umount /proc/kcore; umount -l /proc; echo rc=$?', refused: /rc=32/ },
  { name: 'pivot_root out', script: 'mkdir -p /tmp/n/old; pivot_root /tmp/n /tmp/n/old; echo rc=$?', refused: /Operation not permitted\nrc=1/ },
  { name: 'unshare and nsenter', script: 'unshare -U true; unshare -m true; unshare -p -f true; unshare -n true; nsenter -t 1 -m -p true; echo rc=$?', refused: /(?:Operation not permitted[\s\S]*){5}rc=1/ },
  { name: 'the engine\'s host files through /proc/sys and /proc/sysrq-trigger', script: 'echo "|/tmp/x" > /proc/sys/kernel/core_pattern; echo c > /proc/sysrq-trigger; echo 1 > /proc/sys/vm/drop_caches; echo rc=$?', refused: /Read-only file system[\s\S]*Read-only file system[\s\S]*rc=1/ },
  { name: 'make and open device nodes of the host\'s disks and memory', script: 'mknod /tmp/sda b 8 0; mknod /tmp/mem c 1 1; mknod /tmp/kmsg c 1 11; head -c1 /tmp/sda; head -c1 /tmp/mem; head -c1 /tmp/kmsg; echo rc=$?', refused: /(?:Operation not permitted[\s\S]*){3}rc=1/ },
  { name: 'write the cgroup limits or move out of the cgroups', script: 'echo -1 > /sys/fs/cgroup/memory/memory.limit_in_bytes; echo max > /sys/fs/cgroup/pids/pids.max; mkdir /sys/fs/cgroup/memory/out; echo $$ > /sys/fs/cgroup/memory/cgroup.procs; echo a > /sys/fs/cgroup/devices/devices.allow; echo rc=$?', refused: /(?:Read-only file system[\s\S]*){5}rc=1/ },
  { name: 'write /sys', script: 'echo 1 > /sys/kernel/mm/ksm/run; echo rc=$?', refused: /Read-only file system\nrc=1/ },
];

/** A pid's open descriptors as kinds (pipe, socket, a path), for every process the root shows. */
const DESCRIPTORS = String.raw`for p in /proc/[0-9]*; do n=$(basename $p); [ "$n" = "$BASHPID" ] && continue; for f in $p/fd/*; do printf '%s %s\n' "$(cat $p/comm 2>/dev/null)" "$(readlink $f 2>/dev/null)"; done; done | sed -E 's/\[[0-9]+\]/[n]/' | LC_ALL=C sort -u`;

/** Every process id the kernel lets a root's process signal, against what /proc lists (1 to pid_max). */
const SIGNALLABLE = String.raw`
import os
alive = []
for pid in range(1, int(open('/proc/sys/kernel/pid_max').read()) + 1):
    try:
        os.kill(pid, 0)
        alive.append(pid)
    except ProcessLookupError:
        pass
    except PermissionError:
        alive.append(pid)
listed = sorted(int(n) for n in os.listdir('/proc') if n.isdigit())
print('signallable', alive)
print('listed', listed)
print('names', sorted(set(open('/proc/%d/comm' % pid).read().strip() for pid in listed)))
`;

/** The classic chroot escape: chroot into a folder without entering it, climb out with `..`, chroot there. */
const CHROOT_ESCAPE = heredoc('perl -', String.raw`
mkdir "/tmp/e";
chroot "/tmp/e" or die "chroot: $!";
chdir ".." for 1..64;
chroot "." or die "chroot: $!";
exec "/bin/sh", "-c", "stat -c %i /; ls -a /";
`);

/** A shell line that feeds `program` to `command` on its standard input. */
function heredoc(command: string, program: string): string {
  return `${command} <<'PROGRAM'\n${program}\nPROGRAM`;
}

describe.skipIf(skip)('an episode root has no way out', () => {
  const made: { env: BashEnv; workspaces: Workspace[]; factory: WorkspaceFactory }[] = [];
  const open = async (kind: 'episode-roots' | 'containers') => {
    const [env] = (await createBashEnvs({ goldCache: false, engines: EngineSet.local({ kind }) }, 1)) as [BashEnv];
    const entry = { env, workspaces: [] as Workspace[], factory: env.workspaceFactory() };
    made.push(entry);
    return async (): Promise<Sandbox> => {
      const workspace = await entry.factory.create();
      entry.workspaces.push(workspace);
      return workspace.sandbox;
    };
  };
  const run = async (sandbox: Sandbox, script: string) => (await sandbox.exec(['bash', '-c', `{\n${script}\n} 2>&1`], { timeoutMs: 120_000 })).output.toString();
  let newContainer: () => Promise<Sandbox>;
  let newRoot: () => Promise<Sandbox>;
  let container: Sandbox;
  let root: Sandbox;
  beforeAll(async () => {
    requireEngine(engine);
    newContainer = await open('containers');
    newRoot = await open('episode-roots');
    [container, root] = [await newContainer(), await newRoot()];
  }, 300_000);
  afterAll(async () => {
    for (const { env, workspaces, factory } of made) {
      for (const workspace of workspaces) await factory.destroy(workspace).catch(() => undefined);
      await env.close();
    }
  });

  it.each(ATTACKS)('$name: refused in a new container, answered the same in a root', async ({ script, refused }) => {
    const inContainer = await run(container, script);
    expect(inContainer).toMatch(refused);
    expect(await run(root, script)).toBe(inContainer);
  });

  it('/proc/1/root and every process\'s root are the root itself', async () => {
    const script = 'stat -c %i /proc/1/root/ /; ls -a /proc/1/root/ | tr "\\n" " "; echo; for p in /proc/[0-9]*; do readlink $p/root; done | sort -u';
    const [inRoot, inContainer] = [await run(root, script), await run(container, script)];
    // The inode number of a root's / is its overlay's (two new containers differ in it too).
    const [inode, same, ...rest] = inRoot.split('\n');
    expect(same).toBe(inode);
    expect(rest).toEqual(inContainer.split('\n').slice(2));
    expect(rest).toEqual([expect.stringMatching(/^\. \.\. .*testbed tmp usr var $/), '/', '']);
  });

  it('chroot is refused: the spec keeps no SYS_CHROOT', async () => {
    const inContainer = await run(container, CHROOT_ESCAPE);
    expect(inContainer).toMatch(/^chroot: Operation not permitted/);
    expect(await run(root, CHROOT_ESCAPE)).toBe(inContainer);
  });

  it('every process a root can signal or trace is its own: the helper and the pool are out of reach', async () => {
    const seen = await run(root, heredoc('python3 -', SIGNALLABLE));
    const [signallable, listed, names] = seen.trim().split('\n').map((line) => line.replace(/^\w+ /, ''));
    expect(signallable).toBe(listed);
    // Its own processes: docker-init, the idle process (sleep), this probe and the shells before it.
    expect(names).toBe("['bash', 'docker-init', 'python3', 'sleep']");
  });

  it('the descriptors of a root\'s processes are a container\'s: none of the helper\'s', async () => {
    // An exec's own standard streams are the engine's pipes in a container and the channel's
    // FIFOs in a root (the harness's, both ways); nothing else is open in either.
    const harmless = /^\S+ (?:\/dev\/null|pipe:\[n\]|\/run\/intercode\/[0-9a-f]{12}-\d+\.(?:in|out|ctl) \(deleted\))$/;
    for (const sandbox of [container, root]) {
      const lines = (await run(sandbox, DESCRIPTORS)).trim().split('\n');
      expect(lines.some((line) => line.startsWith('docker-init '))).toBe(true);
      expect(lines.filter((line) => !harmless.test(line))).toEqual([]);
    }
  });

  it('killing everything it can does not harm the pool: the root is removed, the next is made and answers', async () => {
    const victim = await newRoot();
    // Its idle process dies, and with it the root's init: the helper must still remove the root.
    await run(victim, 'kill -9 -1; kill -9 1; sleep 0.2');
    await victim.destroy();
    const next = await newRoot();
    expect(await run(next, 'echo alive')).toBe('alive\n');
    expect(await run(root, 'echo alive')).toBe('alive\n');
  });

  it('what an escape would reach is the pool\'s own: its binds, capabilities and network', async () => {
    const docker = requireEngine(engine);
    const [pool] = await docker.listContainers({ filters: { label: [`${POOL_LABEL}`] } });
    const host = (await docker.getContainer(pool!.Id).inspect()).HostConfig;
    const poolDir = pool!.Labels[POOL_LABEL]!;
    expect(host.Privileged).toBe(false);
    expect(host.CapAdd?.sort()).toEqual(['DAC_READ_SEARCH', 'NET_ADMIN', 'SYS_ADMIN']);
    expect(host.NetworkMode).toBe('none');
    // Writable: the pool's folder, its roots' channels (not the channel root: other sandboxes'
    // channels are not in reach), each cgroup hierarchy's docker/ folder. Everything else read-only.
    const writable = (host.Binds ?? []).filter((bind) => !bind.endsWith(':ro')).map((bind) => bind.split(':')[0]!);
    expect(writable.filter((source) => !/^\/sys\/fs\/cgroup\/[\w,=]+\/docker$/.test(source))).toEqual([poolDir, expect.stringMatching(new RegExp(`^${channelRoot()}/\\d+-[0-9a-f]{16}$`))]);
    expect((host.Binds ?? []).map((bind) => bind.split(':')[0])).not.toContain(channelRoot());
  });

  it('another episode\'s root is out of sight: its files, its upper folder, its mounts', async () => {
    const neighbour = await newRoot();
    const secret = `secret-${Date.now().toString(36)}`;
    await run(neighbour, `echo ${secret} > /tmp/${secret}; echo ${secret} > /testbed/${secret}`);
    const before = await run(root, 'cat /proc/self/mountinfo');
    const third = await newRoot();
    expect(await run(third, 'echo made')).toBe('made\n');
    // A new root's overlay is mounted in the pool's namespace: nothing of it reaches an existing root.
    expect(await run(root, 'cat /proc/self/mountinfo')).toBe(before);
    const upper = join(rootFolderOf(neighbour.id), 'upper');
    const search = `find / -xdev -name '${secret}' 2>/dev/null; grep -rl --exclude-dir=proc --exclude-dir=sys ${secret} /tmp /testbed /root /var /run 2>/dev/null; ls ${upper} ${upper}/../.. 2>&1; echo end`;
    const found = await run(root, search);
    expect(found).toBe(`ls: cannot access '${upper}': No such file or directory\nls: cannot access '${upper}/../..': No such file or directory\nend\n`);
    // The control: the neighbour finds its own files the same way.
    expect(await run(neighbour, `find / -xdev -name '${secret}' 2>/dev/null | sort`)).toBe(`/testbed/${secret}\n/tmp/${secret}\n`);
  });
});

/**
 * What an agent leaves in its root for the harness to remove: the folders go off the episode's
 * path (the helper's remover, or the harness when the pool is gone), so whatever the agent
 * planted there is walked by a process with the pool's rights. No link is followed, and no
 * tree is too deep: a chain deeper than PATH_MAX, left behind, would be a leak that outlives
 * the episode and grows with every one of them (a container's layer has no such limit: the
 * engine removes it by descriptor).
 */
describe.skipIf(skip)('removing what an agent left', () => {
  const envs: BashEnv[] = [];
  const newEnv = async (engines = EngineSet.local({ kind: 'episode-roots' })) => {
    const [env] = (await createBashEnvs({ goldCache: false, engines }, 1)) as [BashEnv];
    envs.push(env);
    return env;
  };
  afterAll(async () => {
    for (const env of envs) await env.close().catch(() => undefined);
  });
  const run = async (sandbox: Sandbox, script: string) => (await sandbox.exec(['bash', '-c', `{\n${script}\n} 2>&1`], { timeoutMs: 120_000 })).output.toString();
  /** A chain of `depth` folders `dd` below `from`, a file at its foot: 3 characters a level. */
  const deepChain = (from: string, depth: number) =>
    `python3 -c "import os\nos.chdir('${from}')\nfor _ in range(${depth}): os.mkdir('dd'); os.chdir('dd')\nopen('foot', 'w').write('foot')\nprint('made')"`;

  it('follows no link the agent planted: their targets (another root, the pools, the pool\'s own files) survive', async () => {
    const env = await newEnv();
    const factory = env.workspaceFactory();
    const [neighbour, victim] = [await factory.create(), await factory.create()];
    await run(neighbour.sandbox, 'echo kept > /tmp/kept');
    const neighbourDir = rootFolderOf(neighbour.sandbox.id);
    const victimDir = rootFolderOf(victim.sandbox.id);
    const poolDir = dirname(dirname(neighbourDir));
    const before = readdirSync(poolDir).sort();
    // Links by absolute path as the pool (and the host) sees them, and by `..` out of the upper.
    const planted = [
      `ln -s / /tmp/to-slash`,
      `ln -s ${neighbourDir} /tmp/to-neighbour`,
      `ln -s ${neighbourDir}/upper/tmp/kept /tmp/to-kept`,
      `ln -s ${poolDir} /tmp/to-pool`,
      `ln -s /usr /testbed/to-usr`,
      `mkdir -p /tmp/d/e && ln -s ../../../../.. /tmp/d/e/up && ln -s ${dirname(poolDir)} /tmp/d/to-pools`,
      'echo planted',
    ].join(' && ');
    expect(await run(victim.sandbox, planted)).toBe('planted\n');
    await factory.destroy(victim);
    await until(() => !existsSync(victimDir));
    expect(readFileSync(join(neighbourDir, 'upper', 'tmp', 'kept'), 'utf8')).toBe('kept\n');
    expect(readdirSync(poolDir).sort()).toEqual(before);
    expect(await run(neighbour.sandbox, 'cat /tmp/kept; ls /usr | wc -l')).toMatch(/^kept\n[1-9]\d*\n$/);
    await factory.destroy(neighbour);
  }, 180_000);

  it('removes a tree deeper than PATH_MAX, from the helper and from the harness when the pool is gone', async () => {
    const engines = EngineSet.local({ kind: 'episode-roots' });
    const env = await newEnv(engines);
    const factory = env.workspaceFactory();
    const [destroyed, leftOpen] = [await factory.create(), await factory.create()];
    // 1,500 levels: 4,500 characters below the upper, past PATH_MAX (4,096).
    for (const workspace of [destroyed, leftOpen]) expect(await run(workspace.sandbox, `${deepChain('/tmp', 1500)}; ${deepChain('/testbed', 1500)}`)).toBe('made\nmade\n');
    const destroyedDir = rootFolderOf(destroyed.sandbox.id);
    const poolDir = dirname(dirname(destroyedDir));
    await factory.destroy(destroyed);
    await until(() => !existsSync(destroyedDir));
    // The pool closed with a root still open: its folder goes with the pool's, by the harness.
    expect(existsSync(rootFolderOf(leftOpen.sandbox.id))).toBe(true);
    await ((await engines.runtime()) as EpisodeRootRuntime).close();
    expect(existsSync(poolDir)).toBe(false);
  }, 300_000);
});

/** Waits (at most 30 s) until `done` holds: removals run off the episode's path. */
async function until(done: () => boolean): Promise<void> {
  for (const started = Date.now(); !done(); await new Promise((resolve) => setTimeout(resolve, 50))) {
    if (Date.now() - started > 30_000) throw new Error(`not done after 30 s: ${String(done)}`);
  }
}

/**
 * With SYS_CHROOT granted (a spec may keep it: it is in the engine's default set), the
 * classic escape climbs to the top of the root's mount namespace: in a root that is the
 * root itself, as in a container, because the pool's file system was detached at pivot_root.
 */
describe.skipIf(skip)('the chroot escape, SYS_CHROOT granted', () => {
  const runtimes: SandboxRuntime[] = [];
  const sandboxes: Sandbox[] = [];
  afterAll(async () => {
    for (const sandbox of sandboxes) await sandbox.destroy().catch(() => undefined);
    for (const runtime of runtimes) await (runtime as { close?(): Promise<void> }).close?.();
  });

  it('lands in the root itself, as in a new container', async () => {
    const docker = requireEngine(engine);
    const spec: SandboxSpec = { image: await bashTestbedImage(docker), hostname: 'intercode', limits: DEFAULT_LIMITS, capabilities: [...DEFAULT_CAPABILITIES, 'SYS_CHROOT'] };
    const [roots, containers] = [new EpisodeRootRuntime(docker), new DockerRuntime(docker)];
    runtimes.push(roots, containers);
    const [root, container] = await Promise.all([roots.create(spec), containers.create(spec)]);
    sandboxes.push(root, container);
    const run = async (sandbox: Sandbox, script: string) => (await sandbox.exec(['bash', '-c', `{\n${script}\n} 2>&1`], { timeoutMs: 60_000 })).output.toString();
    const [escaped, plain] = [await run(root, CHROOT_ESCAPE), await run(root, 'stat -c %i /; ls -a /')];
    // The inode of / (first line) is the overlay's own: compared within the root only.
    expect(escaped).toBe(plain);
    expect(escaped.split('\n').slice(1)).toEqual((await run(container, CHROOT_ESCAPE)).split('\n').slice(1));
    expect(escaped).toMatch(/\ntestbed\ntmp\nusr\nvar\n$/);
    expect(escaped).not.toMatch(/intercode-roots|episode-root/);
  }, 120_000);
});
