/**
 * The Python environment in real Docker sandboxes: the REPL (persistence, expression
 * values, tracebacks, multi-line actions), bad actions (infinite loop, output flood,
 * os._exit, a 10 GB allocation, a forked child), bad submissions (each of those inside a
 * test, plus a recursion bomb) ending as failed tests with a clear message, a clean next
 * episode, APPS scoring, InterCode's gold-state scoring for replays, and a replay.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { pythonRecipe } from '../../envs/python/images.js';
import { PythonEnv } from '../../envs/python/python-env.js';
import { PYTHON_LIMITS } from '../../envs/python/index.js';
import type { TestVerdict } from '../../envs/python/reward.js';
import type { Task } from '../../src/datasets/index.js';
import { replayTrajectories } from '../../src/replay/replay.js';
import { DEFAULT_CAPABILITIES } from '../../src/sandbox/types.js';
import { readRecordedTrajectories } from '../../src/trajectory/index.js';
import { pooledVecEnv } from '../../src/vec/make-vec-env.js';
import { loadDataset } from '../../src/datasets/index.js';
import { buildImageUnlabelled, dockerTestFile, requireEngine, skipWithoutEngine, testContainers, sharedTestRuntime, TEST_SANDBOX_SETTINGS } from '../setup/docker.js';
import { tempDir } from '../setup/temp-dirs.js';

const { testRun, engine } = await dockerTestFile();

const DOUBLE: Task = {
  index: 0,
  id: 'double',
  query: 'Write a function that doubles a number.',
  gold: 'def is_even(n):\n    return n % 2 == 0\ndef double(x):\n    return 2 * x',
  metadata: { tests: ['assert double(2) == 4', 'assert double(-3) == -6', 'assert double(0) == OFFSET'], test_setup_code: 'OFFSET = 0' },
};
const SUM: Task = {
  index: 1,
  id: 'sum',
  query: 'Read two integers and print their sum.',
  gold: 'a, b = map(int, input().split())\nprint(a + b)',
  metadata: { tests: [{ input: '1 2\n', output: '3\n' }, { input: '10 -4\n', output: '6' }] },
};

const REAL_DATA = '../shared/intercode-data';

describe.skipIf(skipWithoutEngine(engine, 'python env'))('PythonEnv in Docker', () => {
  let env: PythonEnv;
  const make = (overrides: Partial<ConstructorParameters<typeof PythonEnv>[0]> = {}) =>
    new PythonEnv({
      runtime: sharedTestRuntime(requireEngine(engine)),
      spec: { image, hostname: 'intercode', limits: PYTHON_LIMITS, capabilities: DEFAULT_CAPABILITIES },
      dataset: [DOUBLE, SUM],
      session: { timeoutMs: 2_000 },
      testTimeoutMs: 2_000,
      ...overrides,
    });
  let image = '';

  beforeAll(async () => {
    image = await buildImageUnlabelled(requireEngine(engine), await pythonRecipe());
    env = make();
  });
  afterAll(() => env?.close());

  const verdicts = (info: { score?: { details: Record<string, unknown> } }) => info.score!.details.verdicts as TestVerdict[];

  it('keeps definitions, shows expression values like a REPL, returns tracebacks with actionExecuted false', async () => {
    await env.reset({ task: 0 });
    expect((await env.step('x = 20')).observation).toBe('');
    const multi = await env.step('def add(a, b):\n    total = a + b\n    return total');
    expect(multi.info.actionExecuted).toBe(true);
    expect((await env.step('add(x, 1)')).observation).toBe('21\n');
    expect((await env.step("'text'")).observation).toBe("'text'\n");
    expect((await env.step('print("p")\nx * 2')).observation).toBe('p\n40\n');
    const failed = await env.step('add(x)');
    expect(failed.info.actionExecuted).toBe(false);
    expect(failed.observation).toMatch(/^Traceback \(most recent call last\):\n {2}File "<action \d+>", line 1[\s\S]*TypeError: add\(\) missing 1 required positional argument: 'b'\n$/);
    expect(failed.observation).not.toContain('driver.py');
    const syntax = await env.step('def broken(:');
    expect(syntax.info.actionExecuted).toBe(false);
    expect(syntax.observation).toContain('SyntaxError');
  });

  it('interrupts an infinite loop and a flood without losing definitions', async () => {
    await env.reset({ task: 0 });
    await env.step('kept = 7');
    const loop = await env.step('while True:\n    pass');
    expect(loop.info.actionExecuted).toBe(false);
    expect(loop.info.events).toContainEqual({ kind: 'timed-out', afterMs: 2_000 });
    expect(loop.observation).toContain('KeyboardInterrupt');
    const flood = await env.step('while True:\n    print("x" * 1000)');
    expect(flood.info.events.some((e) => e.kind === 'output-limit' && e.killed)).toBe(true);
    expect((await env.step('kept')).observation).toBe('7\n');
  }, 30_000);

  it('survives os._exit, a 10 GB allocation and a forked child, saying what happened', async () => {
    await env.reset({ task: 0 });
    const exit = await env.step('import os\nos._exit(3)');
    expect(exit.info.actionExecuted).toBe(false);
    expect(exit.observation).toContain('the interpreter stopped (it exited with status 3); a new one was started and definitions were lost');
    const big = await env.step('block = bytearray(10 * 1024 ** 3)');
    expect(big.observation).toMatch(/MemoryError\n$/);
    const fork = await env.step('import os, time\nif os.fork() == 0:\n    time.sleep(600)\n    os._exit(0)');
    expect(fork.observation).toContain('1 process(es) the action left running were killed');
    expect((await env.step('1 + 1')).observation).toBe('2\n');
  }, 30_000);

  it('scores the gold 1.0 and binds a submission of another name to the tested function', async () => {
    await env.reset({ task: 0 });
    await env.step('def twice(v):\n    return v + v');
    const end = await env.step('submit twice');
    expect(end.terminated).toBe(true);
    expect(end.reward).toBe(1);
    expect(end.info.score!.parts).toEqual({ passed: 3, tests: 3 });
    expect(end.info.score!.details).toMatchObject({ submitted: 'twice', entry: 'double' });
  });

  it.each([
    ['an infinite loop', 'def double(x):\n    while True:\n        pass', /timed out after 2 s and was killed/],
    ['a recursion bomb', 'import sys\ndef double(x):\n    sys.setrecursionlimit(10 ** 9)\n    return double(x + 1)', /timed out|killed by SIGSEGV|RecursionError|MemoryError/],
    ['os._exit', 'import os\ndef double(x):\n    os._exit(0)', /the test process exited with status 0 before reporting a result/],
    ['a 10 GB allocation', 'def double(x):\n    block = bytearray(10 * 1024 ** 3)\n    return 2 * x', /MemoryError/],
    ['a forked child', 'import os, time\ndef double(x):\n    if os.fork() == 0:\n        time.sleep(600)\n    return 2 * x', /the test left 1 process\(es\) running; they were killed/],
  ])('a submission with %s fails every test with a clear message, and the next episode is clean', async (_name, code, message) => {
    await env.reset({ task: 0 });
    expect((await env.step(code)).info.actionExecuted).toBe(true);
    const started = performance.now();
    const end = await env.step('submit double');
    expect(end.reward).toBe(0);
    for (const v of verdicts(end.info)) expect(v.got).toMatch(message);
    expect(performance.now() - started).toBeLessThan(3 * 2_000 + 10_000);
    await env.reset({ task: 0 });
    const fresh = await env.step('double');
    expect(fresh.observation).toContain("NameError: name 'double' is not defined");
    const processes = await env.step('import os\nsorted(int(p) for p in os.listdir("/proc") if p.isdigit())');
    expect(JSON.parse(processes.observation.trim()).length).toBeLessThanOrEqual(6);
  }, 60_000);

  it('scores APPS-style tasks by stdin/stdout, bare submit meaning main', async () => {
    await env.reset({ task: 1 });
    await env.step('def main():\n    a, b = map(int, input().split())\n    print(a + b)');
    const end = await env.step('submit');
    expect(end.reward).toBe(1);
    await env.reset({ task: 1 });
    await env.step('def main():\n    print(7)');
    expect((await env.step('submit main')).reward).toBe(0);
  });

  it('peekScore(name) leaves the interpreter untouched by default and in the gold state in InterCode mode', async () => {
    await env.reset({ task: 0 });
    await env.step('def helper(v):\n    return v * 2\ndef double(x):\n    return helper(x)');
    expect((await env.peekScore('double')).reward).toBe(1);
    expect((await env.step('helper(4)')).observation).toBe('8\n');
    const intercode = make({ afterScore: 'gold-state', entryRule: 'first-def' });
    try {
      await intercode.reset({ task: 0 });
      await intercode.step('def helper(v):\n    return v * 2\ndef double(x):\n    return helper(x)');
      // InterCode binds the submission to the gold's first def (is_even): the tests still call double.
      expect((await intercode.peekScore('double')).reward).toBe(1);
      expect((await intercode.step('helper(4)')).observation).toContain("NameError: name 'helper' is not defined");
      expect((await intercode.step('is_even(4), double(2)')).observation).toBe('(True, 4)\n');
    } finally {
      await intercode.close();
    }
  });

  it('replays a Python log: each def submitted by its name, other actions scored 0', async () => {
    const file = {
      '0': {
        environment: 'ic_python',
        task_id: 0,
        query: DOUBLE.query,
        turn_history: {
          actions: ['def helper(v):\n    return v * 3\ndef double(x):\n    return helper(x)', 'x = 1', 'def double(x):\n    return helper(x) - x'],
          observations: ['', '', ''],
          rewards: [1 / 3, 0, 0],
          valid_action: [null, null, null],
        },
        summary: { max_reward: 1 / 3 },
      },
    };
    const { writeFile } = await import('node:fs/promises');
    const { join } = await import('node:path');
    const path = join(tempDir('py-replay-'), 'log.json');
    await writeFile(path, JSON.stringify(file));
    const intercode = make({ afterScore: 'gold-state', entryRule: 'first-def' });
    try {
      const episodes = await readRecordedTrajectories(path);
      const report = await replayTrajectories({ protocol: 'def-submit', envs: [intercode], tasks: [DOUBLE], episodes });
      // Step 2's helper was wiped by step 0's scoring, as in InterCode: a NameError in every test but the gold-failing none.
      expect(report.steps).toBe(3);
      expect(report.agreeingSteps).toBe(3);
    } finally {
      await intercode.close();
    }
  });

  it.skipIf(!existsSync(`${REAL_DATA}/python/mbpp/ic_mbpp.json`))('replays the first recorded GPT-3.5 episodes in agreement (needs ../shared/intercode-data)', async () => {
    const tasks = await loadDataset(`${REAL_DATA}/python/mbpp/ic_mbpp.json`);
    const episodes = (await readRecordedTrajectories(`${REAL_DATA}/trajectories/python/ic_python_multiturn_gpt-3.5_7_turns.json`)).slice(0, 6);
    const intercode = make({ dataset: tasks, afterScore: 'gold-state', entryRule: 'first-def', session: { timeoutMs: 10_000 }, testTimeoutMs: 5_000 });
    try {
      const report = await replayTrajectories({ protocol: 'def-submit', envs: [intercode], tasks, episodes });
      expect(report.agreement).toBeGreaterThanOrEqual(0.95);
    } finally {
      await intercode.close();
    }
  }, 300_000);

  it('pooled envs share a warm pool restored in place: each episode starts from a new interpreter and scores as a plain env', async () => {
    const envs = [make(), make()];
    const { vec, pool } = pooledVecEnv(envs, { autoreset: 'disabled', pool: { minIdle: 1 } });
    try {
      const rewards: number[] = [];
      for (let i = 0; i < 6; i++) {
        const env = envs[i % 2]!;
        await env.reset({ task: i % 2 });
        // What an earlier episode defined (a global, a file) is gone.
        expect((await env.step('print("leftover" in globals())')).observation).toBe('False\n');
        expect((await env.step('import os\nos.path.exists("/tmp/mark")')).observation).toBe('False\n');
        // A file written makes the sandbox one the pool replaces (docs/fidelity.md); from the third episode on none is written, and the sandboxes are restored in place.
        await env.step(i < 2 ? 'leftover = 1\nopen("/tmp/mark", "w").close()' : 'leftover = 1');
        await env.step(i % 2 === 0 ? 'def double(x):\n    return 2 * x' : 'def main():\n    a, b = map(int, input().split())\n    print(a + b)');
        rewards.push((await env.step('submit')).reward);
      }
      expect(rewards).toEqual([1, 1, 1, 1, 1, 1]);
      // Episode roots are replaced, never restored in place (a new root costs what a restore did).
      if (TEST_SANDBOX_SETTINGS.kind === 'episode-roots') {
        expect(pool.stats().restored).toBe(0);
        expect(pool.stats().removed).toBeGreaterThan(0);
      } else expect(pool.stats().restored).toBeGreaterThan(0);
    } finally {
      await vec.close();
    }
  }, 120_000);

  it('leaves no container of this run running after close', async () => {
    await env.close();
    // On episode roots, the file's pool containers go with its runtime.
    await (sharedTestRuntime(requireEngine(engine)) as { close?(): Promise<void> }).close?.();
    await new Promise((r) => setTimeout(r, 500));
    expect(await testContainers(requireEngine(engine), testRun, true)).toEqual([]);
  });
});
