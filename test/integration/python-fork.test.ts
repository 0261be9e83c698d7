/**
 * Checkpoint and fork a live Python episode (issue 29), in a real engine: the interpreter's
 * state is carried by replaying the episode's actions into a new sandbox and proving the
 * result equal (each observation, the globals' canonical reprs, the written files). Ordinary
 * state (functions, classes, lists, dicts, sets, a seeded generator, written files) restores
 * exactly; children are independent and score as the parent; an action that reads the
 * clock, an unseeded generator or /dev/urandom is refused (typed, `not-replayable`); a
 * hostile `__repr__` (raising, sleeping, changing state, huge) is bounded or refused.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pythonRecipe } from '../../envs/python/images.js';
import { PYTHON_LIMITS } from '../../envs/python/index.js';
import { PythonEnv } from '../../envs/python/python-env.js';
import type { Task } from '../../src/datasets/index.js';
import { writeEpisodeLogs } from '../../src/env/episode-log-writer.js';
import { CheckpointError, EnvStateError } from '../../src/errors.js';
import { DEFAULT_CAPABILITIES } from '../../src/sandbox/types.js';
import { pooledVecEnv } from '../../src/vec/make-vec-env.js';
import { buildImageUnlabelled, dockerTestFile, gvisorGap, requireEngine, skipWithoutEngine, sharedTestRuntime } from '../setup/docker.js';

const { engine } = await dockerTestFile();
const skip = skipWithoutEngine(engine, 'fork of python envs') || gvisorGap('checkpoints read the writable layer on the host: overlay2 and runc only');

const DOUBLE: Task = {
  index: 0,
  id: 'double',
  query: 'Write a function that doubles a number.',
  gold: 'def double(x):\n    return 2 * x',
  metadata: { tests: ['assert double(2) == 4', 'assert double(-3) == -6'], test_setup_code: '' },
};

/** A refusal's code, reason and details, or the error itself when it is not a CheckpointError. */
const refusalOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'restored',
    (error: unknown) => (error instanceof CheckpointError ? { code: error.code, ...error.details } : error),
  );

/**
 * Prints every global the agent made, and the episode's file, as the agent sees them (a set
 * sorted: its order follows string hashes, seeded per interpreter; objects by their fields:
 * their reprs show addresses).
 */
const PROBE = "print(r, items, sorted(bag), conf, cycle, p.__dict__, f.closed, sorted(k for k in globals() if not k.startswith('__'))); print(open('/tmp/notes.txt').read(), oct(os.stat('/tmp/notes.txt').st_mode)); print(double(21), Point(1, 2).norm1())";

describe.skipIf(skip)('checkpoint and fork a live Python episode', () => {
  let image = '';
  const envs: PythonEnv[] = [];
  const make = (overrides: Partial<ConstructorParameters<typeof PythonEnv>[0]> = {}) => {
    const env = new PythonEnv({
      runtime: sharedTestRuntime(requireEngine(engine)),
      spec: { image, hostname: 'intercode', limits: PYTHON_LIMITS, capabilities: DEFAULT_CAPABILITIES },
      dataset: [DOUBLE],
      session: { timeoutMs: 8_000 },
      testTimeoutMs: 2_000,
      ...overrides,
    });
    envs.push(env);
    return env;
  };
  let env: PythonEnv;
  let other: PythonEnv;

  beforeAll(async () => {
    image = await buildImageUnlabelled(requireEngine(engine), await pythonRecipe());
    env = make();
    other = make();
  }, 600_000);
  afterAll(async () => {
    await Promise.all(envs.map((e) => e.close()));
  });

  it('fork(2): functions, classes, containers, a seeded generator and written files follow exactly; children independent; a child submitting the gold scores 1', async () => {
    await env.reset({ task: 0 });
    await env.step('import os, random, json\nrandom.seed(1); r = random.random()\nitems = [1, 2.5, "three", None]\nbag = {"a", "b", "c", "d"}\nconf = {"k": [1, {2, 3}], "n": None}\ncycle = []; cycle.append(cycle)');
    await env.step('class Point:\n    def __init__(self, x, y): self.x, self.y = x, y\n    def norm1(self): return abs(self.x) + abs(self.y)\ndef double(x):\n    return 2 * x\np = Point(3, -4)');
    await env.step("with open('/tmp/notes.txt', 'w') as f: f.write(json.dumps(conf, default=list))\nos.chmod('/tmp/notes.txt', 0o640)\ndouble(r)");
    const handle = await env.checkpoint();
    expect(handle.envId).toBe('intercode/python-v1');
    expect(handle.info.replay).toEqual({ actions: 3 });
    const children = await env.fork(2);
    try {
      const parentProbe = (await env.step(PROBE)).observation;
      expect(parentProbe).toContain("0.13436424411240122 [1, 2.5, 'three', None] ['a', 'b', 'c', 'd']");
      for (const child of children) {
        expect(child.currentTask).toBe(env.currentTask);
        expect((await child.step(PROBE)).observation).toBe(parentProbe);
      }
      // Independent: a global set in one child is seen in no other episode.
      await children[0]!.step("mine = 'child 0'");
      for (const e of [env, children[1]!]) expect((await e.step("print('mine' in globals())")).observation).toBe('False\n');
      // The same submission, the same reward as the parent's.
      const parent = await env.step('submit double');
      expect(parent).toMatchObject({ reward: 1, terminated: true });
      expect(await children[1]!.step('submit double')).toMatchObject({ reward: 1, terminated: true, observation: parent.observation });
    } finally {
      await Promise.all(children.map((child) => child.close()));
    }
    // A handle restores again, in another env of the same kind, as the parent stood at checkpoint time.
    await other.restore(handle);
    expect((await other.step("print(sorted(bag), r, 'mine' in globals())")).observation).toBe("['a', 'b', 'c', 'd'] 0.13436424411240122 False\n");
    env.releaseCheckpoint(handle);
    await expect(other.restore(handle)).rejects.toBeInstanceOf(EnvStateError);
  }, 300_000);

  it.each([
    ['the clock', 'import time; t = time.time()', 'globals'],
    ['an unseeded generator', 'import random; r = random.random()', 'globals'],
    ['/dev/urandom', "b = open('/dev/urandom', 'rb').read(16)", 'globals'],
    ['printed randomness', 'import os; print(os.urandom(8).hex())', 'observation'],
    ['a random file name', "import uuid; open(f'/tmp/{uuid.uuid4()}', 'w').close()", 'files'],
  ])('an action reading %s is refused when restored (not-replayable), the env keeps its episode', async (_what, action, part) => {
    await env.reset({ task: 0 });
    await env.step('x = 1');
    await env.step(action);
    const handle = await env.checkpoint();
    await other.reset({ task: 0 });
    await other.step('before = 1');
    const refusal = await refusalOf(other.restore(handle));
    expect(refusal).toMatchObject({ code: 'CHECKPOINT_REFUSED', reason: 'not-replayable', step: part === 'observation' ? 1 : 2, part });
    // Nothing partial: the env's own episode goes on as it was.
    expect((await other.step("print('before' in globals(), 'x' in globals())")).observation).toBe('True False\n');
    env.releaseCheckpoint(handle);
  }, 120_000);

  it('os.getpid() replays exactly: a new sandbox hands out the same process ids (pinned from the host), so the worker has the parent\'s', async () => {
    await env.reset({ task: 0 });
    await env.step('import os; pid = os.getpid()');
    const handle = await env.checkpoint();
    const seen = (await env.step('pid')).observation;
    await other.restore(handle);
    expect((await other.step('pid')).observation).toBe(seen);
    env.releaseCheckpoint(handle);
  }, 120_000);

  it('a hostile __repr__: one that raises or sleeps is refused (typed, bounded) and the episode goes on; one that changes state changes nothing; a huge one is compared whole', async () => {
    await env.reset({ task: 0 });
    await env.step("class Bad:\n    def __repr__(self): raise RuntimeError('no')\nbad = Bad()");
    expect(await refusalOf(env.checkpoint())).toMatchObject({ code: 'CHECKPOINT_REFUSED', reason: 'repr-raised', name: 'bad', error: 'RuntimeError' });
    await env.step("class Slow:\n    def __repr__(self):\n        import time; time.sleep(3600)\nbad = Slow()");
    const started = performance.now();
    expect(await refusalOf(env.checkpoint())).toMatchObject({ code: 'CHECKPOINT_REFUSED', reason: 'repr-timed-out' });
    expect(performance.now() - started).toBeLessThan(15_000);
    // The interpreter was not touched: the episode goes on with its state.
    expect((await env.step('type(bad).__name__')).observation).toBe("'Slow'\n");
    await env.step("del bad\nclass Counter:\n    seen = 0\n    def __repr__(self):\n        Counter.seen += 1\n        return 'counter'\nc = Counter()\nhuge = list(range(300_000))");
    const handle = await env.checkpoint();
    expect((await env.step('Counter.seen')).observation).toBe('0\n');
    await other.restore(handle);
    expect((await other.step('Counter.seen, len(huge), huge[-1]')).observation).toBe('(0, 300000, 299999)\n');
    env.releaseCheckpoint(handle);
  }, 120_000);

  it('an interpreter whose observer was patched to hang is replaced (unanswered; the next action says its definitions were lost), and 10,001 globals are refused before any repr', async () => {
    await env.reset({ task: 0 });
    await env.step("globals().update({f'g{i}': i for i in range(10_001)})");
    expect(await refusalOf(env.checkpoint())).toMatchObject({ code: 'CHECKPOINT_REFUSED', reason: 'too-many-globals' });
    await env.step("import gc, time\nworker = next(o for o in gc.get_objects() if isinstance(o, type) and o.__name__ == 'Worker')\nworker.observe = lambda self, request: time.sleep(3600)\ndel worker");
    const started = performance.now();
    expect(await refusalOf(env.checkpoint())).toMatchObject({ code: 'CHECKPOINT_REFUSED', reason: 'unanswered' });
    expect(performance.now() - started).toBeLessThan(20_000);
    expect((await env.step("print('g0' in globals())")).observation).toBe('False\n[intercode: the interpreter did not answer when observed and was replaced; a new one was started and definitions were lost]');
  }, 120_000);

  it('what remains: an action that patches the observer in its own interpreter makes parent and child lie alike, so a clock read is restored; the reward still follows the actions alone (the scorer replays them in a new sandbox)', async () => {
    await env.reset({ task: 0 });
    await env.step("import gc, time\ng = next(o for o in gc.get_objects() if type(o).__name__ == 'function' and o.__name__ == 'describe_namespace').__globals__\ng['describe_namespace'] = lambda *a: {'globals': []}\ndel g\nt = time.time()");
    await env.step('def double(x):\n    return 2 * x');
    const handle = await env.checkpoint();
    await other.restore(handle);
    // The child's clock value is not the parent's: the observer was made to lie in both.
    expect((await other.step('t')).observation).not.toBe((await env.step('t')).observation);
    expect(await env.step('submit double')).toMatchObject({ reward: 1, terminated: true });
    expect(await other.step('submit double')).toMatchObject({ reward: 1, terminated: true });
    env.releaseCheckpoint(handle);
  }, 120_000);

  it('VecEnv.fork of a pooled slot (its sandbox restored in place by the pool): the free slots continue its episode, each on its own', async () => {
    const slots = [make(), make(), make()];
    const { vec } = pooledVecEnv(slots, { autoreset: 'disabled', pool: { minIdle: 1 } });
    const step = async (actions: string[], ids: number[]) => {
      vec.send(actions, ids);
      return (await vec.recv(ids.length)).sort((a, b) => a.envId - b.envId).map((s) => s.observation);
    };
    try {
      // A first episode, so that the pool's sandboxes have been lent and restored in place.
      await vec.reset([0], { task: 0 });
      await step(['leftover = 1'], [0]);
      await vec.reset([0], { task: 0 });
      await step(['import random\nrandom.seed(7)\nseq = [random.randrange(100) for _ in range(3)]'], [0]);
      expect(await vec.fork(0, 2)).toEqual([1, 2]);
      const probe = "print(seq, random.randrange(100), 'leftover' in globals())";
      const [parent, first, second] = await step([probe, probe, probe], [0, 1, 2]);
      expect(parent).toMatch(/^\[\d+, \d+, \d+\] \d+ False\n$/);
      expect([first, second]).toEqual([parent, parent]);
      await step(['mine = 1'], [1]);
      expect(await step(["'mine' in globals()", "'mine' in globals()"], [0, 2])).toEqual(['False\n', 'False\n']);
    } finally {
      await vec.close();
    }
  }, 180_000);

  it("a child's trajectory log holds the parent's steps, then its own, with its reward", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'intercode-python-fork-logs-'));
    try {
      const parent = writeEpisodeLogs(make(), dir);
      await parent.reset({ task: 0 });
      await parent.step('def double(x):\n    return 2 * x');
      await parent.step('double(4)');
      const [child] = await parent.fork(1);
      await child!.step('double(5)');
      expect(await child!.step('submit double')).toMatchObject({ reward: 1 });
      await child!.close();
      const [file] = readdirSync(dir);
      const log = JSON.parse(readFileSync(join(dir, file!), 'utf8')) as { reward: number; trajectory: { action: string; observation: string }[] };
      expect(log.reward).toBe(1);
      expect(log.trajectory).toEqual([
        { action: 'def double(x):\n    return 2 * x', observation: '' },
        { action: 'double(4)', observation: '8\n' },
        { action: 'double(5)', observation: '10\n' },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('a handle of a closed env, and checkpoint() without an episode, are EnvStateErrors', async () => {
    const owner = make();
    await owner.reset({ task: 0 });
    await owner.step('a = 1');
    const handle = await owner.checkpoint();
    await owner.close();
    await expect(other.restore(handle)).rejects.toBeInstanceOf(EnvStateError);
    await expect(owner.checkpoint()).rejects.toBeInstanceOf(EnvStateError);
  }, 120_000);
});
