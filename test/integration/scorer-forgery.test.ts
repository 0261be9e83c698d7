/**
 * A hostile agent against the bash scorer, in real sandboxes: each attack is an episode
 * whose real effect on the files is a control episode's (the same actions without the
 * trick), plus something meant to make the scorer's `git status` or `md5sum` say what the
 * gold's did. Whatever the trick, the sabotaged episode must score exactly what its control
 * scores — never the gold's 1.0 — and never be cut off for it: the probe runs programs the
 * trick cannot replace, reads no configuration an agent can write, and no agent process runs
 * while it does (they are stopped, and what they wrote before is not the probe's output).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBashEnv } from '../../envs/bash/index.js';
import type { BashEnv } from '../../envs/bash/bash-env.js';
import { goldText } from '../../src/datasets/index.js';
import { shellQuote } from '../../src/sandbox/shell/shell-script.js';
import type { StepResult } from '../../src/env/types.js';
import { dockerTestFile, requireEngine, skipWithoutEngine, testEngines, UNDER_GVISOR } from '../setup/docker.js';

const { engine } = await dockerTestFile();

/** Golds of the built-in tasks the attacks use. */
const GOLD = {
  /** Prints a count, changes nothing. */
  readOnly: 'grep -c ERROR /testbed/logs/app.log',
  /** Adds `?? testbed/reports/` (no "." in the path: its contents are not summed in `intercode` hash mode); prints nothing. */
  addsFolder: 'mkdir -p /testbed/reports && grep ERROR /testbed/logs/app.log > /testbed/reports/errors.txt',
  /** Adds `?? testbed/data/archive/readings-2022-12.csv` (summed); prints nothing. */
  addsFile: 'gzip -dk /testbed/data/archive/readings-2022-12.csv.gz',
};

/** An executable `path` whose text is `script` (a shell script), written by one action. */
const install = (path: string, script: string) => `mkdir -p ${path.slice(0, path.lastIndexOf('/'))} && printf '%s\\n' '#!/bin/sh' ${shellQuote(script)} > ${path} && chmod 755 ${path}`;

/** The line `git status --short` prints for the folder the addsFolder gold makes. */
const FOLDER_LINE = '?? testbed/reports/';

/**
 * Shell words that loop over the harness's shells as an agent finds them (`p`: each pid),
 * from a process started with the agent's shell's pid as `$0`: bashes started as the
 * harness starts its shells, but the agent's own.
 */
const HARNESS_SHELLS = 'for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = "$0" ] && continue; case "$(tr "\\0" " " < $d/cmdline 2>/dev/null)" in "bash --noprofile --norc -c "*) ;; *) continue;; esac;';

/** A read-only step whose observation shows that a trick took. */
type Proof = { action: string; shows: RegExp };

/** Proof that a fake `name` is the one a shell finds, and what it prints when run as `args`. */
const foundFirst = (name: string, dir: string, args: string, prints: string): Proof => ({
  action: `command -v ${name}; ${name} ${args}`,
  shows: new RegExp(`^${dir}/${name}\n${prints}`),
});

/**
 * Proof that a trick hides /testbed/junk from the git of a new login shell (the startup files
 * and configuration the trick wrote), where a git reading none of them lists it.
 */
const HIDES_JUNK: Proof = {
  action: [
    "echo honest $(cd / && env -u GIT_DIR -u GIT_WORK_TREE -u XDG_CONFIG_HOME HOME=/nonexistent GIT_CONFIG_NOSYSTEM=1 git --no-optional-locks status --short --untracked-files=all 2>&1 | grep -c testbed/junk)",
    "echo tricked $(bash -l -c 'cd / && git --no-optional-locks status --short 2>&1' | grep -c testbed/junk)",
  ].join('; '),
  shows: /^honest 1\ntricked 0$/m,
};

describe.skipIf(skipWithoutEngine(engine, 'scorer forgery tests'))('an agent cannot forge the bash reward', () => {
  let env: BashEnv;

  beforeAll(async () => {
    requireEngine(engine);
    env = await createBashEnv({ seed: 1, engines: testEngines() });
  }, 300_000);

  afterAll(async () => {
    await env?.close();
  });

  const taskOf = (gold: string) => {
    const index = env.tasks.findIndex((task) => goldText(task) === gold);
    expect(index, `a built-in task with gold ${gold}`).toBeGreaterThanOrEqual(0);
    return index;
  };

  /**
   * Plays `actions` on the task whose gold is `gold`, then submits; `proof` (a read-only step)
   * is played before the last action (whose observation the reward reads) and its
   * observation must match `shows`.
   */
  async function play(gold: string, actions: readonly string[], proof?: Proof): Promise<StepResult> {
    await env.reset({ task: taskOf(gold) });
    for (const [i, action] of actions.entries()) {
      if (proof && i === actions.length - 1) expect((await env.step(proof.action)).observation, `the trick took: ${proof.action}`).toMatch(proof.shows);
      const step = await env.step(action);
      expect(step.truncated, `${action}: ${step.observation}`).toBe(false);
    }
    return env.step('submit');
  }

  /**
   * The sabotaged episode scores what the control scores, below the gold's 1.0, and is not
   * cut off; `proof` shows, in the sabotaged episode, that the trick took (else a trick that
   * silently failed would make sabotage equal control).
   */
  async function expectSameAsControl(gold: string, control: readonly string[], trick: readonly string[], proof: Proof): Promise<void> {
    const honest = await play(gold, control);
    const sabotaged = await play(gold, [...trick, ...control], proof);
    expect(honest.truncated).toBe(false);
    expect(honest.reward).toBeLessThan(1);
    expect(sabotaged.truncated, sabotaged.info.truncation?.message).toBe(false);
    expect(sabotaged.reward).toBe(honest.reward);
    expect(sabotaged.info.score?.details.diff_miss).toEqual(honest.info.score?.details.diff_miss);
    expect(sabotaged.info.score?.details.diff_extra).toEqual(honest.info.score?.details.diff_extra);
  }

  it('the gold itself scores 1', async () => {
    for (const gold of Object.values(GOLD)) expect((await play(gold, [gold])).reward, gold).toBe(1);
  });

  it('a git in /usr/sbin (or /sbin, /usr/local/sbin) that prints the gold\'s listing is not run', async () => {
    const fake = `echo '${FOLDER_LINE}'`;
    for (const dir of ['/usr/sbin', '/usr/local/sbin']) {
      await expectSameAsControl(GOLD.addsFolder, ['true'], [install(`${dir}/git`, fake)], foundFirst('git', dir, 'status --short', '\\?\\? testbed/reports/'));
    }
  });

  it('an md5sum in /usr/sbin that prints the gold\'s sum is not run', async () => {
    // The file the gold makes, with other contents; the fake sums what the gold's would hold.
    const fake = 'gzip -dc /testbed/data/archive/readings-2022-12.csv.gz | /usr/bin/md5sum | sed "s|-$|$1|"';
    // The fake is found first and prints the sum of what the gold's file would hold.
    const proof: Proof = {
      action: 'command -v md5sum; md5sum /testbed/data/archive/readings-2022-12.csv; gzip -dc /testbed/data/archive/readings-2022-12.csv.gz | /usr/bin/md5sum',
      shows: /^\/usr\/sbin\/md5sum\n([0-9a-f]{32}) {2}\/testbed\/data\/archive\/readings-2022-12\.csv\n\1 {2}-$/m,
    };
    await expectSameAsControl(GOLD.addsFile, ['echo wrong > /testbed/data/archive/readings-2022-12.csv'], [install('/usr/sbin/md5sum', fake)], proof);
  });

  it.each([
    ['a per-user ignore file', "mkdir -p /root/.config/git && printf '*\\n' > /root/.config/git/ignore"],
    ['an ignore file under XDG_CONFIG_HOME of every shell', "mkdir -p /root/x/git && printf '*\\n' > /root/x/git/ignore && echo 'export XDG_CONFIG_HOME=/root/x' | tee -a /etc/environment /etc/profile /etc/bash.bashrc /root/.bashrc /root/.profile >/dev/null"],
    ['a per-user configuration in XDG_CONFIG_HOME', "mkdir -p /root/.config/git && printf '[status]\\n\\tshowUntrackedFiles = no\\n' > /root/.config/git/config"],
    ['a system configuration', "printf '[status]\\n\\tshowUntrackedFiles = no\\n[core]\\n\\texcludesFile = /etc/hide\\n' > /etc/gitconfig && printf '*\\n' > /etc/hide"],
    ['git variables in every startup file', "echo 'export GIT_DIR=/nonexistent GIT_WORK_TREE=/tmp' | tee -a /etc/environment /etc/profile /etc/bash.bashrc /root/.bashrc /root/.profile >/dev/null"],
  ])('%s does not hide an untracked file', async (_what, trick) => {
    await expectSameAsControl(GOLD.readOnly, ['echo junk > /testbed/junk', GOLD.readOnly], [trick], HIDES_JUNK);
  });

  it("a process writing the gold's listing into the scorer shell's stdout (/proc/<pid>/fd/1) does not reach the score", async () => {
    // Every few milliseconds for 20 s, into the stdout of every shell the harness started
    // but the agent's own (that would change its last observation): whatever the scorer
    // runs meanwhile would print the gold's line (the open is refused since the agent's
    // shells are confined; before, the frame word kept the bytes out of the listing). It
    // notes the targets it found in /root (which the scorer's git ignores).
    const injector = [
      'sleep 1',
      `targets=; ${HARNESS_SHELLS} targets="$targets /proc/$p/fd/1"; done; echo "targets:$targets" > /root/.injector`,
      `end=$((SECONDS + 20)); while [ $SECONDS -lt $end ]; do for t in $targets; do echo '${FOLDER_LINE}' > $t; done 2>/dev/null; sleep 0.002; done`,
    ].join('; ');
    await expectSameAsControl(GOLD.addsFolder, ['true'], [`nohup bash -c ${shellQuote(injector)} $$ >/dev/null 2>&1 &`, 'sleep 1.5'], { action: 'cat /root/.injector', shows: /^targets:( \/proc\/\d+\/fd\/1)+$/m });
  });

  it("no agent process can reach the harness's processes through /proc: the control shell's descriptors, memory and environment, the idle process's, init's", async () => {
    await env.reset({ task: taskOf(GOLD.readOnly) });
    // Every process of the sandbox that is not the agent's shell or one of its children:
    // the control shell (a bash started as the harness starts its shells), the idle
    // process, docker-init. Each access tried prints a line; none may succeed (listing
    // /proc/<pid>/fd stays allowed, and is harmless: numbers only). Opening /proc/<pid>/mem
    // read-write takes the check ptrace(PTRACE_ATTACH) makes (ATTACH mode).
    const probe = [
      'for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = "$$" ] && continue; [ "$p" = "$BASHPID" ] && continue',
      '  c=$(tr "\\0" " " < /proc/$p/cmdline 2>/dev/null)',
      '  case "$p:$c" in 1:*) who=init;; *:"bash --noprofile --norc -c "*) who=control;; *:intercode-idle*) who=idle;; *) continue;; esac',
      '  cat /proc/$p/environ >/dev/null 2>&1 && echo "reached $who environ"',
      '  readlink /proc/$p/fd/0 >/dev/null 2>&1 && echo "reached $who fd-link"',
      '  for n in 0 1 2 3 4; do { : >> /proc/$p/fd/$n; } 2>/dev/null && echo "reached $who fd/$n"; done',
      '  { exec 7< /proc/$p/mem; } 2>/dev/null && echo "reached $who mem-read"; exec 7<&-',
      '  { exec 7<> /proc/$p/mem; } 2>/dev/null && echo "reached $who mem-write"; exec 7<&-',
      '  readlink /proc/$p/cwd >/dev/null 2>&1 && echo "reached $who cwd"',
      '  ls /proc/$p/root/ >/dev/null 2>&1 && echo "reached $who root"',
      '  echo "tried $who"',
      'done',
    ].join('\n');
    // From a background process too (a child, not the shell itself).
    const step = await env.step(`(${probe}) & wait`);
    expect(step.observation).toContain('tried control');
    expect(step.observation).toContain('tried idle');
    const reached = step.observation.split('\n').filter((line) => line.startsWith('reached'));
    // gVisor 20221219 checks no access to /proc/<pid>/fd and environ, whatever the caller's
    // capabilities (docs/security.md): there only those are reached, never mem, cwd or root
    // (the stop pass the scorer sends then goes by an exec of its own: see the command pipe test).
    if (UNDER_GVISOR) expect(reached.filter((line) => !/^reached (init|idle|control) (environ|fd-link|fd\/\d)$/.test(line))).toEqual([]);
    else expect(reached).toEqual([]);
    // The agent keeps what it had: its own processes' /proc entries are its to read.
    const own = await env.step('sleep 30 & p=$!; cat /proc/$p/environ >/dev/null && ls /proc/$p/fd >/dev/null && { exec 7< /proc/$p/mem; } && echo own-ok; kill $p');
    expect(own.observation).toContain('own-ok');
    expect(await env.step(GOLD.readOnly).then(() => env.step('submit'))).toMatchObject({ truncated: false, reward: 1 });
  });

  it('a setpriv (or bash) of the agent\'s, run by the harness when it starts the agent\'s next shell, ends the episode truncated, never scored', async () => {
    // The fake starts the next shell without dropping the harness's capability: that shell
    // could reach the control shell. The layers show the change: the episode is cut off.
    await env.reset({ task: taskOf(GOLD.addsFolder) });
    const fake = await env.step(`cp /usr/bin/setpriv /root/.setpriv && ${install('/usr/bin/setpriv', 'shift 3; exec "$@"')} && echo installed`);
    expect(fake.observation).toContain('installed');
    const killed = await env.step('kill -9 $$');
    expect(killed.truncated, killed.observation).toBe(false);
    const caps = await env.step('grep CapEff /proc/$$/status');
    expect(caps.observation).toContain('00000000000001fb');
    const submitted = await env.step('submit');
    expect(submitted.truncated).toBe(true);
    expect(submitted.info.truncation?.reason).toBe('state-unreadable');
    expect(await play(GOLD.addsFolder, [GOLD.addsFolder])).toMatchObject({ truncated: false, reward: 1 });
  }, 120_000);

  it("a bash of the agent's ahead in the search path (/usr/local/bin), run by the harness as its next control shell, ends the episode truncated, never scored", async () => {
    // The wrapper runs the real bash, noting the capabilities it was started with: killed,
    // the control shell is replaced by it, with the harness's capability (0x1fb).
    await env.reset({ task: taskOf(GOLD.addsFolder) });
    const wrapper = 'grep CapEff /proc/self/status >> /root/.started; exec /usr/bin/bash "$@"';
    expect((await env.step(`${install('/usr/local/bin/bash', wrapper)} && echo planted`)).observation).toContain('planted');
    const kill = `for d in /proc/[0-9]*; do p=\${d#/proc/}; [ "$p" = "$$" ] && continue; case "$(tr '\\0' ' ' < $d/cmdline)" in "bash --noprofile --norc -c "*) kill -KILL $p;; esac; done 2>/dev/null; true`;
    await env.step(kill);
    const submitted = await env.step('submit');
    expect(submitted.truncated).toBe(true);
    expect(submitted.info.truncation?.reason).toBe('state-unreadable');
    expect(await play(GOLD.addsFolder, [GOLD.addsFolder])).toMatchObject({ truncated: false, reward: 1 });
  }, 120_000);

  it.each([
    ['killed', 'KILL'],
    ['stopped', 'STOP'],
  ])('a control shell the agent %s (signals still reach it) never yields a forged reward: the episode is scored honestly or truncated', async (_what, signal) => {
    // The harness's shell: a bash started as the harness starts its shells, not the agent's own.
    const kill = `for d in /proc/[0-9]*; do p=\${d#/proc/}; [ "$p" = "$$" ] && continue; case "$(tr '\\0' ' ' < $d/cmdline)" in "bash --noprofile --norc -c "*) kill -${signal} $p && echo signalled;; esac; done 2>/dev/null; true`;
    await env.reset({ task: taskOf(GOLD.addsFolder) });
    const signalled = await env.step(kill);
    expect(signalled.observation).toContain('signalled');
    const submitted = await env.step('submit');
    if (submitted.truncated) expect(['state-unreadable', 'sandbox-lost', 'protocol-violation']).toContain(submitted.info.truncation?.reason);
    else expect(submitted.reward).toBeLessThan(1);
    // The next episode is clean.
    expect(await play(GOLD.addsFolder, [GOLD.addsFolder])).toMatchObject({ truncated: false, reward: 1 });
  }, 120_000);

  it("a process reading the scorer shell's command pipe (/proc/<pid>/fd/3: its commands, their frame words) and writing into its stdout does not reach the score", async () => {
    // For 20 s: reads whatever the harness sends the scorer's shell (stealing its commands
    // and their frame words), and writes the gold's line into its stdout. Before the agent's
    // shells were confined this stole the probe's first command (the stop pass): the probe
    // timed out and the episode was cut off. Under gVisor the pipe can be read whatever the
    // thief's capabilities: there the stop pass goes by an exec of its own (seen cut off
    // once in three runs before).
    const thief = [
      'sleep 1',
      `for p in $(${HARNESS_SHELLS} echo $p; done); do echo "stealing $p" >> /root/.thief; timeout 20 cat /proc/$p/fd/3 >/dev/null 2>&1 & done; sleep 0.2`,
      // A stop and continue puts the shell's read behind the thief's in the pipe's queue.
      `for p in $(${HARNESS_SHELLS} echo $p; done); do kill -STOP $p; sleep 0.1; kill -CONT $p; done`,
      `end=$((SECONDS + 20)); while [ $SECONDS -lt $end ]; do for p in $(${HARNESS_SHELLS} echo $p; done); do echo '${FOLDER_LINE}' > /proc/$p/fd/1; done 2>/dev/null; sleep 0.01; done`,
    ].join('; ');
    await expectSameAsControl(GOLD.addsFolder, ['true'], [`nohup bash -c ${shellQuote(thief)} $$ >/dev/null 2>&1 &`, 'sleep 1.5'], { action: 'cat /root/.thief', shows: /^stealing \d+$/m });
  }, 120_000);

  it('processes left running are stopped only while the probe reads: they go on after a score, ones the agent stopped stay stopped, a process that forks all the time is stopped too', async () => {
    await env.reset({ task: taskOf(GOLD.readOnly) });
    const left = await env.step('(sleep 300 & echo $! > /root/running); (sleep 301 & p=$!; kill -STOP $p; echo $p > /root/stopped); (while :; do (:); done &); echo started');
    expect(left.observation).toContain('started');
    const peeked = await env.peekScore();
    expect(peeked.reward).toBeGreaterThan(0);
    const states = await env.step("for f in /root/running /root/stopped; do p=$(cat $f); s=$(cat /proc/$p/stat); s=${s##*) }; echo ${s%% *}; done");
    expect(states.observation.split('\n').slice(0, 2)).toEqual(['S', 'T']);
    expect(await env.step(GOLD.readOnly).then(() => env.step('submit'))).toMatchObject({ truncated: false, reward: 1 });
  });
});
