/**
 * ShellSession and IntercodeExecRunner in real Docker sandboxes, fed the actions that
 * break naive harnesses. Each test checks what the agent is shown (output, events, the
 * rendered observation) and that the next command — or, after destructive ones, a new
 * sandbox from the same image — is clean.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, SandboxError } from '../../src/errors.js';
import { MASKED_PATHS } from '../../src/sandbox/docker/container-creation.js';
import { IntercodeExecRunner } from '../../src/sandbox/shell/intercode-exec-runner.js';
import { ShellSession, type ShellSessionOptions } from '../../src/sandbox/shell/shell-session.js';
import { renderObservation, type CommandEvent, type CommandResult } from '../../src/sandbox/shell/types.js';
import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS, type Sandbox, type SandboxRuntime } from '../../src/sandbox/types.js';
import { bashTestbedImage, gvisorGap, probeEngine, removeTestContainers, requireEngine, skipWithoutEngine, startTestRun, TEST_SANDBOX_SETTINGS, testRuntime } from '../setup/docker.js';

/** This pass's sandboxes are episode roots (.ci/root-tests), not containers. */
const ROOTS = TEST_SANDBOX_SETTINGS.kind === 'episode-roots';
import { kubernetesTestFile, requireCluster, skipWithoutCluster } from '../setup/kubernetes.js';

const testRun = startTestRun();
const engine = await probeEngine();
const cluster = await kubernetesTestFile(testRun);

/** The runtimes every test here runs on: Docker, and Kubernetes pods (images from the local engine, the node's). */
const RUNTIMES = [
  { name: 'Docker', skip: skipWithoutEngine(engine, 'ShellSession integration tests'), runtime: () => testRuntime(requireEngine(engine)) },
  { name: 'Kubernetes', skip: skipWithoutEngine(engine, 'ShellSession integration tests') || skipWithoutCluster(cluster, 'ShellSession integration tests'), runtime: () => requireCluster(cluster) as SandboxRuntime },
];

/** Counts processes with builtins only: init, the idle process and the shell make 3. */
const COUNT_PROCESSES = 'n=0; for d in /proc/[0-9]*; do n=$((n+1)); done; echo $n';
const BASELINE_PROCESSES = 3;

afterAll(async () => {
  await removeTestContainers(engine.ok ? engine.docker : undefined, testRun);
});

const kinds = (result: CommandResult) => result.events.map((e) => e.kind);
const eventOf = <K extends CommandEvent['kind']>(result: CommandResult, kind: K) =>
  result.events.find((e): e is Extract<CommandEvent, { kind: K }> => e.kind === kind);

for (const target of RUNTIMES) describe.skipIf(target.skip)(`ShellSession in a ${target.name} sandbox`, () => {
  let runtime: SandboxRuntime;
  let image: string;
  const made: Sandbox[] = [];

  beforeAll(async () => {
    image = await bashTestbedImage(requireEngine(engine));
    runtime = target.runtime();
  }, 300_000);

  afterEach(async () => {
    await Promise.all(made.splice(0).map((s) => s.destroy().catch(() => undefined)));
  });

  async function newSandbox(): Promise<Sandbox> {
    const sandbox = await runtime.create({ image, hostname: 'intercode', limits: DEFAULT_LIMITS, capabilities: DEFAULT_CAPABILITIES });
    made.push(sandbox);
    return sandbox;
  }

  async function openShell(options: Partial<ShellSessionOptions> = {}): Promise<{ sandbox: Sandbox; shell: ShellSession }> {
    const sandbox = await newSandbox();
    return { sandbox, shell: await ShellSession.open(sandbox, options) };
  }

  /** The shell answers a builtin and a forked command, and nothing is left running. */
  async function expectClean(shell: ShellSession, cwd = '/'): Promise<void> {
    const result = await shell.run(`pwd; /bin/echo forked; ${COUNT_PROCESSES}`);
    expect(result.events).toEqual([]);
    expect(result.exitCode).toBe(0);
    expect(result.output).toBe(`${cwd}\nforked\n${BASELINE_PROCESSES}\n`);
  }

  it('ls and stat read files (under gVisor through the statx library, see gvisor-statx.ts)', async () => {
    const { shell } = await openShell();
    const result = await shell.run("ls -d /testbed /etc; stat -c '%n %F' /etc/hostname; ls /nonexistent");
    expect(result.output).toBe("/etc\n/testbed\n/etc/hostname regular file\nls: cannot access '/nonexistent': No such file or directory\n");
    expect(result.exitCode).toBe(2);
  });

  describe('commands past their time limit', () => {
    it('a sleeping command is killed: partial output and shell state are kept', async () => {
      const { shell } = await openShell({ timeoutMs: 1_500 });
      await shell.run('cd /tmp && KEPT=yes');
      const result = await shell.run('echo before; sleep 30');
      expect(result.timedOut).toBe(true);
      expect(result.events[0]).toEqual({ kind: 'timed-out', afterMs: 1_500 });
      expect(kinds(result)).not.toContain('shell-restarted');
      expect(result.output.startsWith('before\n')).toBe(true);
      expect(result.durationMs).toBeLessThan(1_500 + 5_000);
      expect(renderObservation(result)).toContain('[intercode: command timed out after 1.5 s and was killed; output so far is shown]');
      const after = await shell.run('echo "KEPT=$KEPT"');
      expect(after.output).toBe('KEPT=yes\n');
      await expectClean(shell, '/tmp');
    });

    it("processes named as the sandbox's idle process are killed with the rest: the idle process is spared by its place, not its name", async () => {
      const { shell } = await openShell({ timeoutMs: 1_500 });
      // disown: bash would otherwise report the killed job ("Killed …") after a later command, when it notices.
      const result = await shell.run('(exec -a intercode-idle sleep 998) & disown; (exec -a intercode-idle sleep 997 &); sleep 30');
      expect(result.timedOut).toBe(true);
      await expectClean(shell);
    });

    it('a builtin busy loop in the shell itself: the shell is replaced, cwd kept, variables lost', async () => {
      const { shell } = await openShell({ timeoutMs: 1_500 });
      await shell.run('cd /tmp && LOST=yes');
      const result = await shell.run('while :; do :; done');
      expect(result.timedOut).toBe(true);
      expect(result.exitCode).toBeNull();
      expect(result.events).toEqual([
        { kind: 'timed-out', afterMs: 1_500 },
        { kind: 'shell-restarted', reason: 'killed', cwd: '/tmp' },
      ]);
      expect(renderObservation(result)).toContain('the shell had to be killed; a new shell was started in /tmp');
      expect((await shell.run('echo "LOST=$LOST"')).output).toBe('LOST=\n');
      await expectClean(shell, '/tmp');
    });
  });

  describe('output limits', () => {
    // seq 1 100000 writes 9·2 + 90·3 + 900·4 + 9000·5 + 90000·6 + 7 bytes.
    const SEQ_BYTES = 588_895;
    const seqText = Array.from({ length: 100_000 }, (_, i) => `${i + 1}\n`).join('');

    it('keeps the first maxOutputBytes and counts the rest', async () => {
      expect(seqText.length).toBe(SEQ_BYTES);
      const { shell } = await openShell({ maxOutputBytes: 1_000, killOutputBytes: 1_000_000 });
      const result = await shell.run('seq 1 100000');
      expect(result.exitCode).toBe(0);
      expect(result.output).toBe(seqText.slice(0, 1_000));
      expect(result.outputBytes).toBe(SEQ_BYTES);
      expect(result.events).toEqual([{ kind: 'output-limit', shownBytes: 1_000, totalBytes: SEQ_BYTES, killed: false }]);
      expect(renderObservation(result)).toContain(`showing the first 1000 of ${SEQ_BYTES} bytes`);
      await expectClean(shell);
    });

    it('kills `yes` once it passes killOutputBytes, well within the time limit', async () => {
      const { shell } = await openShell({ maxOutputBytes: 1_000, killOutputBytes: 100_000, timeoutMs: 20_000 });
      const result = await shell.run('yes');
      expect(result.timedOut).toBe(false);
      expect(result.durationMs).toBeLessThan(10_000);
      expect(result.output).toBe('y\n'.repeat(500));
      const limit = eventOf(result, 'output-limit');
      expect(limit).toMatchObject({ shownBytes: 1_000, killed: true });
      expect(limit!.totalBytes).toBeGreaterThan(100_000);
      expect(result.outputBytes).toBe(limit!.totalBytes);
      expect(renderObservation(result)).toContain('the command was killed for writing too much');
      await expectClean(shell);
    });

    it('`cat /dev/urandom` is stopped by the output limit (or the timeout) and the observation says so', async () => {
      const { shell } = await openShell({ timeoutMs: 5_000 });
      const result = await shell.run('cat /dev/urandom');
      const observation = renderObservation(result);
      if (result.timedOut) {
        expect(observation).toContain('command timed out after 5 s');
      } else {
        expect(eventOf(result, 'output-limit')).toMatchObject({ shownBytes: 64 * 1024, killed: true });
        expect(observation).toContain('the command was killed for writing too much');
      }
      expect(Buffer.byteLength(result.output)).toBeGreaterThan(0);
      await expectClean(shell);
    });

    // Regression (was a bug): ShellSessionOptions.killOutputBytes is documented as
    // "default 16 × maxOutputBytes", but the default is a fixed 1 MiB, so a larger
    // maxOutputBytes alone is rejected with a ConfigError.
    it('killOutputBytes defaults to 16 × maxOutputBytes (a 2 MiB cap alone is accepted)', async () => {
      const sandbox = await newSandbox();
      const shell = await ShellSession.open(sandbox, { maxOutputBytes: 2 * 1024 * 1024 }).catch((error: unknown) => {
        expect(error).not.toBeInstanceOf(ConfigError);
        throw error;
      });
      const result = await shell.run('head -c 1500000 /dev/zero | tr "\\0" x');
      expect(result.outputBytes).toBe(1_500_000);
      expect(result.events).toEqual([]);
      shell.close();
    });
  });

  describe('commands that read stdin get EOF at once', () => {
    it.each([
      ['cat', '', 0],
      ['read x; echo "got:$x"', 'got:\n', 0],
    ])('%s', async (command, output, exitCode) => {
      const { shell } = await openShell({ timeoutMs: 5_000 });
      const result = await shell.run(command);
      expect(result.timedOut).toBe(false);
      expect(result.durationMs).toBeLessThan(2_000);
      expect(result.output).toBe(output);
      expect(result.exitCode).toBe(exitCode);
      expect(result.events).toEqual([]);
      await expectClean(shell);
    });

    it('python3 -c "input()" raises EOFError', async () => {
      const { shell } = await openShell({ timeoutMs: 5_000 });
      const result = await shell.run('python3 -c "input()"');
      expect(result.timedOut).toBe(false);
      expect(result.exitCode).toBe(1);
      expect(result.output).toContain('EOFError: EOF when reading a line');
      await expectClean(shell);
    });
  });

  describe('pagers', () => {
    it('PAGER, GIT_PAGER and MANPAGER are cat, and `git log` in the image root does not hang', async () => {
      const { shell } = await openShell({ timeoutMs: 5_000 });
      expect((await shell.run('echo "$PAGER $GIT_PAGER $MANPAGER $TERM"')).output).toBe('cat cat cat dumb\n');
      const log = await shell.run('cd / && git log');
      expect(log.timedOut).toBe(false);
      expect(log.exitCode).toBe(0);
      expect(log.output).toMatch(/^commit [0-9a-f]{40}\n/);
      expect(log.output).toContain('initial commit');
      await expectClean(shell);
    });

    it('less and man, where installed, print instead of waiting for keys', async () => {
      const { shell } = await openShell({ timeoutMs: 5_000 });
      const installed = (await shell.run('for c in less man; do command -v $c >/dev/null && echo $c; done')).output.split('\n').filter(Boolean);
      if (installed.includes('less')) {
        const less = await shell.run('less /etc/hostname');
        expect(less.timedOut).toBe(false);
        expect(less.output).toBe('intercode\n');
      }
      if (installed.includes('man')) {
        const man = await shell.run('man bash | head -n 3');
        expect(man.timedOut).toBe(false);
      }
      await expectClean(shell);
    });
  });

  describe('a shell that exits or is replaced is restarted in the same directory', () => {
    it.each(['exit', 'exit 3', 'kill -9 $$', 'exec sleep 1', 'exec cat'])('%s', async (command) => {
      const { shell } = await openShell({ timeoutMs: 5_000 });
      await shell.run('mkdir -p /tmp/here && cd /tmp/here && LOST=yes');
      const result = await shell.run(command);
      expect(result.exitCode).toBeNull();
      expect(result.timedOut).toBe(false);
      expect(result.events).toEqual([{ kind: 'shell-restarted', reason: 'exited', cwd: '/tmp/here' }]);
      expect(renderObservation(result)).toBe(
        '[intercode: the shell exited; a new shell was started in /tmp/here (variables and functions were lost)]',
      );
      expect(shell.cwd).toBe('/tmp/here');
      expect((await shell.run('echo "LOST=$LOST"')).output).toBe('LOST=\n');
      await expectClean(shell, '/tmp/here');
    });
  });

  describe('binary output', () => {
    it('random bytes come back as a string; the protocol survives them', async () => {
      const { shell } = await openShell();
      const result = await shell.run('head -c 2000 /dev/urandom');
      expect(typeof result.output).toBe('string');
      expect(result.outputBytes).toBe(2_000);
      expect(result.exitCode).toBe(0);
      expect(result.events).toEqual([]);
      await expectClean(shell);
    });

    it('invalid UTF-8 becomes U+FFFD; valid multi-byte text is kept', async () => {
      const { shell } = await openShell();
      const result = await shell.run(String.raw`printf 'a\xffb\xc3(\xe2\x82\xac)\xf0\x9f'`);
      expect(result.output).toBe('a\uFFFDb\uFFFD(€)\uFFFD');
      expect(result.outputBytes).toBe(11);
      await expectClean(shell);
    });
  });

  describe('quoting reaches bash unchanged', () => {
    let shell: ShellSession;
    let sandbox: Sandbox;
    beforeAll(async () => {
      ({ shell, sandbox } = await openShell());
      made.splice(made.indexOf(sandbox), 1); // lives for the whole block, not one test
    });
    afterAll(async () => {
      shell.close();
      await sandbox.destroy();
    });

    it.each([
      ['double and single quotes', `v=val; echo "d:$v" 'single:$v' "it's" 'say "hi"'`, `d:val single:$v it's say "hi"\n`],
      ['backticks and $()', 'echo `echo tick` $(echo dollar) "$(echo "nested \\"q\\"")"', 'tick dollar nested "q"\n'],
      ["ANSI-C $'...'", String.raw`printf '%s\n' $'tab:\t|nl:\n|sq:\'|bs:\\'`, "tab:\t|nl:\n|sq:'|bs:\\\n"],
      ['backslashes', String.raw`echo 'a\b\\c' \\n "x\\y\"z" \$HOME`, String.raw`a\b\\c \n x\y"z $HOME` + '\n'],
      ['escapes printf %b would eat', String.raw`echo 'a\cb' '\0101' '\x41' '%b %s %%'`, String.raw`a\cb \0101 \x41 %b %s %%` + '\n'],
      ['a quoted heredoc', "cat <<'EOF'\nline $1 `x` \\n\n  indented\nEOF", 'line $1 `x` \\n\n  indented\n'],
      ['an expanding heredoc', 'w=world; cat <<EOF\nhello $w\n\ttab\nEOF', 'hello world\n\ttab\n'],
      ['a multi-line command', 'for i in 1 2 3\ndo\n  echo "n=$i"\ndone', 'n=1\nn=2\nn=3\n'],
      ['unicode', 'echo "héllo wörld ✓ 日本語 🎉"', 'héllo wörld ✓ 日本語 🎉\n'],
      ['a carriage return and leading blanks', "   echo 'a\rb'", 'a\rb\n'],
      ['a trailing comment and newline', 'echo kept # not this\n', 'kept\n'],
    ])('%s', async (_name, command, expected) => {
      const result = await shell.run(command);
      expect(result.output).toBe(expected);
      expect(result.exitCode).toBe(0);
      expect(result.events).toEqual([]);
    });

    // The wire format counts the command's length: in ASCII, so a command that sets a UTF-8
    // locale (where bash's read -N counts characters, not bytes) cannot shift the next command.
    it('text outside ASCII arrives whole whatever locale a command set, a long command too', async () => {
      expect((await shell.run('export LC_ALL=C.UTF-8; echo "héllo ✓"')).output).toBe('héllo ✓\n');
      expect((await shell.run('echo "日本語 🎉 $((1 + 1))"')).output).toBe('日本語 🎉 2\n');
      const long = await shell.run(`printf %s '${'é'.repeat(256 * 1024)}' | wc -c`);
      expect(long.output).toBe(`${256 * 1024 * 2}\n`);
      expect((await shell.run('unset LC_ALL; echo next')).output).toBe('next\n');
    });

    it('a syntax error is an observation, and the shell goes on', async () => {
      const result = await shell.run('echo "unbalanced');
      expect(result.exitCode).toBe(2);
      expect(result.output).toContain('unexpected EOF');
      expect((await shell.run('echo next')).output).toBe('next\n');
    });
  });

  describe('shell settings an agent may change', () => {
    // Regression (was a bug): the marker's OOM reading uses `read -r k v` with the agent's
    // IFS, so after `IFS=,` the kill is not reported with its command (it shows up on a
    // later command instead).
    it.skipIf(gvisorGap('gVisor 20221219 shows the sandbox no cgroup files: OOM kills and the pids limit hold but are not reported as events'))('an out-of-memory kill is reported even after the agent set IFS', async () => {
      const { shell } = await openShell({ timeoutMs: 60_000 });
      const result = await shell.run('IFS=,; head -c 2000M /dev/zero | tail');
      expect(result.exitCode).toBe(137);
      expect(eventOf(result, 'out-of-memory')).toEqual({ kind: 'out-of-memory', kills: 1 });
    }, 120_000);

    // Regression (was a bug): with `set -x` every observation shows the session's own
    // protocol commands (printf/eval/__ic_report, and the marker nonce).
    it('`set -x` traces the agent\'s commands, not the session protocol', async () => {
      const { shell } = await openShell();
      await shell.run('set -x');
      const result = await shell.run('echo hi');
      expect(result.output).toContain('echo hi\nhi\n');
      expect(result.output).not.toContain('__ic_');
      expect(result.output).not.toContain('builtin printf');
    });

    it('set -e makes a failing command end the shell, which is restarted', async () => {
      const { shell } = await openShell();
      await shell.run('cd /tmp && set -e');
      const result = await shell.run('false');
      expect(result.events).toEqual([{ kind: 'shell-restarted', reason: 'exited', cwd: '/tmp' }]);
      await expectClean(shell, '/tmp');
    });
  });

  it('cd, variables, exported variables and functions persist between commands', async () => {
    const { shell } = await openShell();
    await shell.run('cd /tmp');
    await shell.run('X=42; export E=exported');
    await shell.run('f() { echo "f:$1:$X"; }');
    const result = await shell.run('pwd; f arg; bash -c \'echo "child:$E:$X"\'');
    expect(result.output).toBe('/tmp\nf:arg:42\nchild:exported:\n');
    expect(result.cwd).toBe('/tmp');
    expect(shell.cwd).toBe('/tmp');
  });

  it('sends a definition once per shell process: ahead of the first command that needs it, and again after a respawn', async () => {
    const { shell } = await openShell();
    const definitions = ['sent=$((sent + 1)); greet() { echo "hi $sent"; }'];
    expect((await shell.run('greet', { definitions })).output).toBe('hi 1\n');
    expect((await shell.run('greet', { definitions })).output).toBe('hi 1\n');
    await shell.run('exit');
    expect((await shell.run('greet', { definitions })).output).toBe('hi 1\n');
    expect((await shell.run('greet; echo $sent')).output).toBe('hi 1\n1\n');
  });

  // Kubernetes sets a pod's process limit per node (the kubelet's podPidsLimit), not per pod:
  // the test cluster's kubelet sets none, and a fork bomb would take the shared machine down.
  it.skipIf(target.name === 'Kubernetes' || gvisorGap('gVisor 20221219 shows the sandbox no cgroup files: OOM kills and the pids limit hold but are not reported as events'))('a fork bomb is contained, and a new sandbox is clean', async () => {
    const { shell } = await openShell({ timeoutMs: 5_000 });
    const bomb = await shell.run(':(){ :|:& };:');
    expect(bomb.timedOut).toBe(false);
    // The bomb grows in the background. Within a few commands the session must notice
    // (process-limit), or kill it on a timeout, and end up with nothing left running.
    const seen: string[] = [];
    let clean = false;
    for (let attempt = 0; attempt < 6 && !clean; attempt++) {
      const result = await shell.run(`sleep 0.5; ${COUNT_PROCESSES}`);
      expect(result.durationMs).toBeLessThan(5_000 + 20_000);
      seen.push(...kinds(result));
      clean = result.events.length === 0 && result.output === `${BASELINE_PROCESSES}\n`;
    }
    expect(clean, `events on the way: ${seen.join(', ')}`).toBe(true);
    shell.close();

    const fresh = await ShellSession.open(await newSandbox());
    // Counted by the shell itself: \`ls /proc | grep\` raced (ls may list /proc before bash forks grep).
    expect((await fresh.run(COUNT_PROCESSES)).output).toBe(`${BASELINE_PROCESSES}\n`);
    await expectClean(fresh);
  }, 180_000);

  it('`rm -rf --no-preserve-root /` only breaks its own sandbox', async () => {
    const { shell } = await openShell({ timeoutMs: 120_000 });
    // What happens: rm removes what it can; the shell (already in memory) reports back.
    const outcome = await shell.run('rm -rf --no-preserve-root / 2>/dev/null; echo "rm:$?"').then(
      (result) => ({ result }),
      (error: unknown) => ({ error }),
    );
    expect('result' in outcome && outcome.result.output).toBe('rm:1\n');
    // Builtins still work; programs are gone; a shell can no longer be started.
    expect((await shell.run('echo alive')).output).toBe('alive\n');
    expect((await shell.run('ls /')).exitCode).toBe(127);
    const exit = await shell.run('exit').then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(exit).toBeInstanceOf(SandboxError);
    expect((exit as SandboxError).code).toBe('SANDBOX_LOST');

    const fresh = await ShellSession.open(await newSandbox());
    const check = await fresh.run('ls /testbed >/dev/null && echo testbed-ok; [ -x /bin/ls ] && echo ls-ok; cd / && git status --short | wc -l');
    expect(check.output).toBe('testbed-ok\nls-ok\n0\n');
    await expectClean(fresh);
  }, 180_000);

  it.skipIf(gvisorGap('gVisor 20221219 shows the sandbox no cgroup files: OOM kills and the pids limit hold but are not reported as events'))('running out of memory is reported and the next command works', async () => {
    const { sandbox, shell } = await openShell({ timeoutMs: 60_000 });
    const result = await shell.run('head -c 2000M /dev/zero | tail');
    expect(result.timedOut).toBe(false);
    expect(result.exitCode).not.toBe(0);
    expect(eventOf(result, 'out-of-memory')).toEqual({ kind: 'out-of-memory', kills: 1 });
    expect(renderObservation(result)).toContain("1 process(es) killed: out of memory (the sandbox's memory limit)");
    await expectClean(shell);
    // A later session in the same sandbox (a warm pool's next episode) does not report it again.
    shell.close();
    const next = await ShellSession.open(sandbox);
    expect((await next.run('sleep 0.1')).events).toEqual([]);
    next.close();
  }, 120_000);

  it.skipIf(target.name !== 'Docker')("the host's kernel caches, memory blocks, block devices and terminals are not shown in /sys (MASKED_PATHS)", async () => {
    const { shell } = await openShell();
    const listed = await shell.run(`for p in ${MASKED_PATHS.filter((p) => p.startsWith('/sys/')).join(' ')}; do [ -e $p ] && echo "$p $(ls -A $p | wc -l)"; done; ls /sys/fs/cgroup >/dev/null && echo cgroups-shown`);
    const shown = listed.output.trim().split('\n').slice(0, -1);
    expect(shown.length, 'at least /sys/kernel/slab exists (a SLUB kernel)').toBeGreaterThan(0);
    for (const line of shown) expect(line).toMatch(/ 0$/);
    expect(listed.output).toMatch(/cgroups-shown\n$/);
  });

  // Regression (was a bug, seen under gVisor, whose exec streams may stay open after the
  // container dies): a command that timed out on a container killed from outside led to a
  // restart of its processes, which started the container again, and the episode was scored.
  it.skipIf(target.name !== 'Docker' || ROOTS)('restarting the processes of a container killed from outside is SANDBOX_LOST: it is not started again', async () => {
    const sandbox = await newSandbox();
    const container = requireEngine(engine).getContainer(sandbox.id);
    await container.kill();
    const restarted = await sandbox.restartProcesses().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(restarted).toBeInstanceOf(SandboxError);
    expect((restarted as SandboxError).code).toBe('SANDBOX_LOST');
    expect((restarted as SandboxError).cause).toMatchObject({ message: expect.stringMatching(/^the container is exited/) });
    expect((await container.inspect()).State.Running).toBe(false);
  });

  // An episode root is replaced, never restarted (root-sandbox.ts): its episode ends truncated.
  it.skipIf(!ROOTS)('restarting the processes of an episode root is SANDBOX_LOST', async () => {
    const sandbox = await newSandbox();
    await expect(sandbox.restartProcesses()).rejects.toMatchObject({ code: 'SANDBOX_LOST' });
  });
});

for (const target of RUNTIMES) describe.skipIf(target.skip)(`IntercodeExecRunner in a ${target.name} sandbox`, () => {
  let runner: IntercodeExecRunner;
  let session: ShellSession;
  let sandbox: Sandbox;

  beforeAll(async () => {
    const image = await bashTestbedImage(requireEngine(engine));
    sandbox = await target.runtime().create({ image, hostname: 'intercode', limits: DEFAULT_LIMITS, capabilities: DEFAULT_CAPABILITIES });
    runner = new IntercodeExecRunner(sandbox, { shellPath: '/bin/bash', timeoutMs: 5_000 });
    session = await ShellSession.open(sandbox);
    await session.run('mkdir -p /tmp/globs && touch /tmp/globs/a.txt /tmp/globs/b.txt /tmp/globs/c.txt');
  });

  afterAll(async () => {
    session?.close();
    await sandbox?.destroy();
  });

  it('loses the double quotes of an action, so a quoted glob expands (as InterCode did)', async () => {
    const cd = await runner.run('cd /tmp/globs');
    expect(cd.exitCode).toBe(0);
    const result = await runner.run('find . -name "*.txt"');
    expect(result.exitCode).toBe(1);
    expect(result.output.split('\n')[0]).toBe("find: paths must precede expression: `b.txt'");
    // The same action in a ShellSession keeps its quotes.
    const quoted = await session.run('cd /tmp/globs && find . -name "*.txt" | sort');
    expect(quoted.output).toBe('./a.txt\n./b.txt\n./c.txt\n');
  });

  it('keeps `cd` only as the next working directory', async () => {
    await runner.run('cd /tmp');
    expect(runner.cwd).toBe('/tmp');
    expect((await runner.run('pwd')).output).toBe('/tmp\n');
    await runner.run('cd ..');
    expect((await runner.run('pwd')).output).toBe('/\n');
    await runner.run('cd /does/not/exist');
    expect(runner.cwd).toBe('/');
  });

  it('keeps no variables between actions', async () => {
    expect((await runner.run('x=1')).exitCode).toBe(0);
    expect((await runner.run('echo $x')).output).toBe('\n');
  });

  it("answers an unbalanced quote with 'Malformed command'", async () => {
    const result = await runner.run('echo "hi');
    expect(result.output).toBe('Malformed command');
    expect(result.exitCode).toBeNull();
  });

  it("answers a command past its time limit with 'Command timed out' and kills it", async () => {
    const result = await runner.run('sleep 30', { timeoutMs: 1_000 });
    expect(result.timedOut).toBe(true);
    expect(result.output).toBe('Command timed out');
    // Its kill script spares nothing but init and the idle process: the sleep is gone.
    const listing = await sandbox.exec(['bash', '-c', `for d in /proc/[0-9]*; do tr '\\0' ' ' < $d/cmdline; echo; done`]);
    expect(listing.output.toString()).not.toContain('sleep 30');
  });
});
