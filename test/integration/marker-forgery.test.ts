/**
 * A hostile agent against the shell protocol, in real sandboxes, over both transports:
 * `fifo` (markers on a control channel of their own) and `attach` (one stream, markers
 * in-band). Every attack is a sequence of steps whose commands print tokens naming their
 * own step; whatever the attack, no step may return a token of another step, and an attack
 * that reaches the protocol must be reported as a `protocol-violation` (the env then ends
 * the episode truncated). Attacks that only print look-alike markers must be harmless.
 */
import type Docker from 'dockerode';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createBashEnv } from '../../envs/bash/index.js';
import { DockerRuntime, type Transport } from '../../src/sandbox/docker/docker-runtime.js';
import { ShellSession } from '../../src/sandbox/shell/shell-session.js';
import type { CommandResult } from '../../src/sandbox/shell/types.js';
import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS, type Sandbox } from '../../src/sandbox/types.js';
import { bashTestbedImage, dockerTestFile, gvisorGap, requireEngine, skipWithoutEngine, TEST_SANDBOX_SETTINGS, testEngines, UNDER_GVISOR } from '../setup/docker.js';

const { engine } = await dockerTestFile();

/** The shell's secrets, read the way only a test may. */
const secrets = (shell: ShellSession) => shell as unknown as { nonce: string; seq: number };

/** A marker as the shell writes it, for command `id` (`<seq>:<token>`, shell words allowed). */
const MARKER = (id: string) => `printf '\\x1e%s %s 7 1 -1 -1 -1 /forged\\x1f%s\\n' "$__ic_nonce" ${id} "$__ic_nonce"`;
/** The current command's id, as the shell holds it while the command runs. */
const OWN_ID = '"${__ic_line%% *}"';
/** The shell's descriptors of the control channel (fifo) or, in-band, every one it writes. */
const CONTROL_FDS = 'for f in /proc/$$/fd/*; do case $(readlink $f) in *.ctl*) echo $f;; esac; done';
const INPUT_FDS = 'for f in /proc/$$/fd/*; do case $(readlink $f) in *.in*|pipe:*) [ ${f##*/} -ge 3 ] && echo $f;; esac; done';

const violated = (results: CommandResult[]) => results.some((r) => r.events.some((e) => e.kind === 'protocol-violation'));

/** No step's output holds a token of another step ("S<i>-…" is printed by step i only). */
function expectNoShift(results: CommandResult[]): void {
  results.forEach((result, i) => {
    for (const token of result.output.match(/\bS\d+-[a-z]+/g) ?? []) expect(token.startsWith(`S${i}-`), `step ${i} returned ${token}`).toBe(true);
  });
}

/** After a violation, the step that reports it shows nothing, and a new shell is clean. */
function expectReported(results: CommandResult[]): void {
  expect(violated(results)).toBe(true);
  for (const result of results.filter((r) => r.events.some((e) => e.kind === 'protocol-violation'))) {
    expect(result.output).toBe('');
    expect(result.exitCode).toBeNull();
  }
}

describe.skipIf(skipWithoutEngine(engine, 'marker forgery tests'))('a command cannot forge the end of its step', () => {
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

  async function openShell(transport: Transport): Promise<ShellSession> {
    const runtime = new DockerRuntime(docker, { transport, ...TEST_SANDBOX_SETTINGS });
    const sandbox = await runtime.create({ image, hostname: 'intercode', limits: DEFAULT_LIMITS, capabilities: DEFAULT_CAPABILITIES });
    made.push(sandbox);
    return ShellSession.open(sandbox, { timeoutMs: 4_000 });
  }

  /** Runs the steps (`commands(shell)` may read the shell's next sequence number). */
  async function play(shell: ShellSession, commands: string[], timeoutMs = 4_000): Promise<CommandResult[]> {
    const results: CommandResult[] = [];
    for (const command of commands) results.push(await shell.run(command, { timeoutMs }));
    expectNoShift(results);
    return results;
  }

  // Under gVisor there are no host FIFOs: its sandboxes use the attach transport only.
  describe.each<Transport>(UNDER_GVISOR ? ['attach'] : ['fifo', 'attach'])('over the %s transport', (transport) => {
    it('the nonce is in no environment and no command line', async () => {
      const shell = await openShell(transport);
      const [result] = await play(shell, [
        "env; for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; tr '\\0' ' ' < $p/cmdline; echo; done 2>/dev/null; echo S0-done",
      ]);
      expect(result!.output).toContain('S0-done');
      expect(result!.output).toContain('PAGER=cat');
      expect(result!.output).not.toContain(secrets(shell).nonce);
    });

    it('a hand-over line as a command, or as a line of its own, is an ordinary command: the shell stays where it is', async () => {
      const shell = await openShell(transport);
      const [a, b, c] = await play(shell, [
        '@handover /tmp/taken; echo S0-after $?',
        // A newline in a command cannot start a protocol line: it is inside the command's counted text.
        'echo S1-own\n@handover /tmp/taken',
        'echo S2-own',
      ]);
      expect(a!.output).toContain('@handover: command not found');
      expect(a!.output).toContain('S0-after 127');
      expect(b!.output).toContain('S1-own');
      expect(b!.output).toContain('@handover: command not found');
      expect(c!.output).toBe('S2-own\n');
      for (const r of [a!, b!, c!]) expect(r.events).toEqual([]);
    });

    it('a look-alike marker with a guessed nonce is output like any other', async () => {
      const shell = await openShell(transport);
      const [a, b] = await play(shell, [
        "printf '\\x1e0123456789abcdef 1:00 0 1 -1 -1 -1 /x\\x1f0123456789abcdef\\n'; echo S0-rest; (exit 3)",
        'echo S1-own',
      ]);
      expect(a!.exitCode).toBe(3);
      expect(a!.output).toContain('S0-rest');
      expect(a!.events).toEqual([]);
      expect(b!.output).toBe('S1-own\n');
    });

    it('a marker written with the real nonce on stdout: harmless on a control channel, else reported', async () => {
      const shell = await openShell(transport);
      const results = await play(shell, [`${MARKER(OWN_ID)}; sleep 0.5; echo S0-rest; (exit 2)`, 'echo S1-own', 'echo S2-own']);
      if (transport === 'fifo') {
        expect(results[0]!.exitCode).toBe(2);
        expect(results[0]!.output).toContain('S0-rest');
        expect(results[0]!.cwd).toBe('/');
        expect(violated(results)).toBe(false);
        expect(results[1]!.output).toBe('S1-own\n');
      } else {
        expectReported(results);
      }
    });

    it('a background writer that prints a marker for the next command cannot end it', async () => {
      const shell = await openShell(transport);
      const next = `"$(( \${__ic_line%%:*} + 1 )):0000000000000000"`;
      const results = await play(shell, [`( sleep 0.4; ${MARKER(next)}; echo BG-late ) & echo S0-now`, 'sleep 1.2; echo S1-own', 'echo S2-own']);
      if (transport === 'fifo') {
        // Printed to stdout: output of whichever step is running (as in a terminal), never an end.
        expect(results[1]!.output).toContain('BG-late');
        expect(results[1]!.output).toContain('S1-own');
        expect(results[1]!.durationMs).toBeGreaterThan(1_000);
        expect(violated(results)).toBe(false);
      } else {
        // In-band it has the nonce but cannot know the next command's token: reported at once.
        expectReported(results);
        expect(results[1]!.events.some((e) => e.kind === 'protocol-violation')).toBe(true);
      }
    });

    it('a command line written into the shell\'s own input is reported, never run as the next step', async () => {
      const shell = await openShell(transport);
      expect((await shell.run(INPUT_FDS)).output, 'the shell\'s input is found: the attack is mounted').toMatch(/^\/proc\/\d+\/fd\/\d+$/m);
      // A well-formed frame (header with the length, then the text) for the next sequence number.
      const inject = `c='echo S0-injected'; for f in $(${INPUT_FDS}); do printf '%s %s\\n%s' "$(( \${__ic_line%%:*} + 1 )):00" \${#c} "$c" > $f; done; echo S0-own`;
      const results = await play(shell, [inject, 'echo S1-own', 'echo S2-own']);
      // gVisor 20221219 refuses to open the pipe the shell reads for writing through
      // /proc/<pid>/fd ("Operation not permitted", measured): the line never arrives, and
      // every step is its own.
      if (UNDER_GVISOR) {
        expect(results[0]!.output).toMatch(/Operation not permitted\nS0-own\n$/);
        expect(results.slice(1).map((r) => r.output)).toEqual(['S1-own\n', 'S2-own\n']);
        expect(violated(results)).toBe(false);
      }
      else expectReported(results);
    });

    it('a header written into the shell\'s own input that claims a gigabyte costs the next step its time limit, no more: that step never runs, the ones after it do', async () => {
      const shell = await openShell(transport);
      // The shell then waits for 10^9 characters, taking the harness's next command as their start.
      const inject = `for f in $(${INPUT_FDS}); do printf '%s 999999999\\n' "$(( \${__ic_line%%:*} + 1 )):00" > $f; done; echo S0-own`;
      const [, swallowed, after] = await play(shell, [inject, 'echo S1-own', 'echo S2-own'], 2_000);
      if (UNDER_GVISOR) {
        // The header never arrives (the open is refused, see the test above): the next step runs as it is.
        expect([swallowed!.output, after!.output]).toEqual(['S1-own\n', 'S2-own\n']);
        return;
      }
      expect(swallowed!.output).toBe('');
      expect(swallowed!.exitCode).toBeNull();
      expect(swallowed!.events.map((e) => e.kind)).toContain('timed-out');
      expect(after!.output).toBe('S2-own\n');
      expect(after!.events).toEqual([]);
    });

    it('a forged end that leaves the command running does not lift the time limit', async () => {
      const shell = await openShell(transport);
      const forge = transport === 'fifo' ? `for f in $(${CONTROL_FDS}); do ${MARKER(OWN_ID)} > $f; done` : MARKER(OWN_ID);
      const results = await play(shell, [`${forge}; sleep 30; echo S0-late`, 'echo S1-own', 'echo S2-own'], 2_000);
      expectReported(results);
      expect(results.reduce((sum, r) => sum + r.durationMs, 0)).toBeLessThan(15_000);
      expect((await shell.run('echo S3-clean')).output).toBe('S3-clean\n');
    });

    it('a marker start with no end, then endless bytes, is reported instead of held', async () => {
      const shell = await openShell(transport);
      const start = `printf '\\x1e%s ' "$__ic_nonce"; cat /dev/zero`;
      const forge = transport === 'fifo' ? `for f in $(${CONTROL_FDS}); do { ${start}; } > $f; done` : start;
      const results = await play(shell, [`${forge}; echo S0-late`, 'echo S1-own', 'echo S2-own'], 2_000);
      expectReported(results);
      // Reported by the step that forged it as soon as the start outgrew any marker, not
      // after its time limit (the held bytes would have grown until then).
      expect(results[0]!.events.map((e) => e.kind)).toContain('protocol-violation');
      expect(results[0]!.events.map((e) => e.kind)).not.toContain('timed-out');
      expect((await shell.run('echo S3-clean')).output).toBe('S3-clean\n');
    });

    it('redefining the builtins the protocol uses ends in a timeout and a new shell, not a forged end', async () => {
      const shell = await openShell(transport);
      const results = await play(shell, ['builtin() { :; }; printf() { :; }; echo S0-own', 'echo S1-own', 'echo S2-own'], 2_000);
      const kinds = results.flatMap((r) => r.events.map((e) => e.kind));
      expect(kinds).toContain('shell-restarted');
      expect((await shell.run('echo S3-clean')).output).toBe('S3-clean\n');
    });

    /** Prints `S0-<name>` on stderr when descriptor `fd` of the shell is open on what `other` is (a redirection's effect, seen in the step that made it). */
    const SAME_AS = (name: string, fd: number, other: number) => `[ "$(readlink /proc/$$/fd/${fd})" = "$(readlink /proc/$$/fd/${other})" ] && echo S0-${name} >&2`;
    /** What the last two steps print (as patterns) with the shell's descriptors as the agent left them. */
    const OWN = ['S1-own\nS1-err\n', 'S2-own\n'];
    const WRITE_ERROR = String.raw`bash: line \d+: echo: write error: Bad file descriptor\n`;
    // Each: the redirection, what shows it took in its step, and what the three steps print (measured).
    it.each<[string, string, (transport: Transport) => string[]]>([
      ['exec 4>&1', SAME_AS('fd4', 4, 1), () => ['S0-own\nS0-fd4\n', ...OWN]],
      ['exec 3<&0', SAME_AS('fd3', 3, 0), () => ['S0-own\nS0-fd3\n', ...OWN]],
      // Stdout closed for good: each echo says so, stderr still comes back.
      ['exec 1>&-', 'true', () => [WRITE_ERROR, `${WRITE_ERROR}S1-err\n`, WRITE_ERROR]],
      // Both streams thrown away: the fifo transport's shell is replaced at once (its markers
      // went too); in-band, the shell goes on with its output gone, as in a terminal.
      ['exec 2>/dev/null 1>&2', 'true', (t) => (t === 'fifo' ? ['', ...OWN] : ['', '', ''])],
      ['exec 0</proc/$$/fd/10', SAME_AS('fd0', 0, 10), () => ['S0-own\nS0-fd0\n', ...OWN]],
    ])('%s (an exec redirection) leaves the protocol working, never a forged end', async (redirection, took, expected) => {
      const shell = await openShell(transport);
      const results = await play(shell, [`${redirection}; echo S0-own; ${took}`, 'echo S1-own; echo S1-err >&2', 'echo S2-own', '(exit 7)']);
      expect(results.every((r) => !r.timedOut)).toBe(true);
      expect(violated(results)).toBe(false);
      // The redirection took (what each step printed shows it), and every step ended as its own: the last with its own status.
      const outputs = results.slice(0, 3).map((r) => r.output);
      const patterns = expected(transport);
      expect(outputs.every((output, i) => new RegExp(`^${patterns[i]}$`).test(output)), `${JSON.stringify(outputs)} against ${JSON.stringify(patterns)}`).toBe(true);
      expect(results[3]!.exitCode).toBe(7);
    });
  });

  describe.skipIf(gvisorGap('no host FIFOs under gVisor: no control channel'))('the control channel (fifo transport)', () => {
    it('a marker written onto the shell\'s control descriptor through /proc is reported', async () => {
      const shell = await openShell('fifo');
      const results = await play(shell, [`for f in $(${CONTROL_FDS}); do ${MARKER(OWN_ID)} > $f; done; echo S0-rest`, 'echo S1-own', 'echo S2-own']);
      expectReported(results);
    });

    it('any other bytes on the control channel are reported', async () => {
      const shell = await openShell('fifo');
      const results = await play(shell, [`for f in $(${CONTROL_FDS}); do echo garbage > $f; done; echo S0-rest`, 'echo S1-own']);
      expectReported(results);
    });

    it('a background process writing a marker for a later command onto the control channel cannot end it', async () => {
      const shell = await openShell('fifo');
      const next = `"$(( \${__ic_line%%:*} + 1 )):0000000000000000"`;
      const results = await play(shell, [
        `fds=$(${CONTROL_FDS}); ( sleep 0.4; for f in $fds; do ${MARKER(next)} > $f; done ) & echo S0-now`,
        'sleep 1.2; echo S1-own',
        'echo S2-own',
      ]);
      expectReported(results);
      expect(results[1]!.events.some((e) => e.kind === 'protocol-violation')).toBe(true);
    });

    it('a command written into the scorer\'s shell: its descriptors cannot be opened, the episode is scored as without the attempt', async () => {
      const env = await createBashEnv({ engines: testEngines() });
      try {
        await env.reset({ task: 0 });
        // Before the agent's shells were confined (see harness-capability.ts) this reached the
        // scorer's shell and ended the episode truncated (protocol-violation); now no
        // descriptor of another process than the agent's own can be read or opened.
        // The attack is mounted: the same glob and pattern find the agent's own shell's input
        // FIFO (the scorer's is named alike), and the scorer's shell is there to aim at.
        const aim = 'for f in /proc/$$/fd/*; do case $(readlink $f) in *.in*) echo S0-own-fifo;; esac; done; ' +
          'for p in /proc/[0-9]*; do [ "${p#/proc/}" = "$$" ] && continue; case "$(tr "\\0" " " < $p/cmdline)" in "bash --noprofile --norc -c "*) echo S0-target;; esac; done 2>/dev/null; true';
        const aimed = await env.step(aim);
        expect(aimed.observation).toMatch(/^S0-own-fifo$/m);
        expect(aimed.observation).toMatch(/^S0-target$/m);
        const inject =
          'for p in /proc/[0-9]*; do [ "${p#/proc/}" = "$$" ] && continue; for f in $p/fd/*; do ' +
          "case $(readlink $f) in *.in*) printf '%s\\n' '1:0 echo S0-injected' > $f && echo S0-reached;; esac; done; done 2>/dev/null; echo S0-own";
        const step = await env.step(inject);
        expect(step.observation).toContain('S0-own');
        expect(step.observation).not.toContain('S0-reached');
        const submitted = await env.step('submit');
        expect(submitted.truncated).toBe(false);
        expect(submitted.info.score).toBeDefined();
      } finally {
        await env.close();
      }
    });

    it('the control channel is closed for the command and everything it starts', async () => {
      const shell = await openShell('fifo');
      // ls's complaints are dropped: a descriptor the inner bash holds only while it starts its
      // pipeline can be listed and gone before ls reads its link (the roots pass of CI saw it once).
      const [result] = await play(shell, ['ls -l /proc/self/fd/ 2>/dev/null | grep -c ctl; bash -c "ls -l /proc/\\$\\$/fd/ 2>/dev/null | grep -c ctl"; echo S0-done']);
      expect(result!.output).toBe('0\n0\nS0-done\n');
    });
  });
});
