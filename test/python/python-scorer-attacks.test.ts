/**
 * A hostile agent against the Python env's scoring, in real Docker sandboxes (issue 26).
 * Each attack is an episode whose submission is wrong (`double` returns its argument: one
 * test of three passes, reward 1/3, as the control episode shows); the sabotaged episode
 * must score what that wrong function deserves, the host must live on, and the next
 * episode must be clean.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pythonRecipe } from '../../envs/python/images.js';
import { PythonEnv } from '../../envs/python/python-env.js';
import { PYTHON_LIMITS } from '../../envs/python/index.js';
import type { Task } from '../../src/datasets/index.js';
import { DEFAULT_CAPABILITIES } from '../../src/sandbox/types.js';
import { buildImageUnlabelled, dockerTestFile, requireEngine, skipWithoutEngine, sharedTestRuntime } from '../setup/docker.js';
import { FORGE_ON_RESULT_PIPE, MALFORMED_FRAME_ACTION, WRITE_TO_DRIVER_STREAMS } from './hostile-python.js';

const { engine } = await dockerTestFile();

const DOUBLE: Task = {
  index: 0,
  id: 'double',
  query: 'Write a function that doubles a number.',
  gold: 'def double(x):\n    return 2 * x',
  metadata: { tests: ['assert double(2) == 4', 'assert double(-3) == -6', 'assert double(0) == 0'], test_setup_code: '' },
};
const SUM: Task = {
  index: 1,
  id: 'sum',
  query: 'Read two integers and print their sum.',
  gold: 'a, b = map(int, input().split())\nprint(a + b)',
  metadata: { tests: [{ input: '1 2\n', output: '3\n' }, { input: '10 -4\n', output: '6' }] },
};

/** The wrong submission every attack pairs with: right for 0 only. */
const WRONG = 'def double(x):\n    return x';
const WRONG_REWARD = 1 / 3;

describe.skipIf(skipWithoutEngine(engine, 'python scorer attacks'))('the Python scorer against a hostile agent', () => {
  let env: PythonEnv;
  let image = '';

  beforeAll(async () => {
    image = await buildImageUnlabelled(requireEngine(engine), await pythonRecipe());
    env = new PythonEnv({
      runtime: sharedTestRuntime(requireEngine(engine)),
      spec: { image, hostname: 'intercode', limits: PYTHON_LIMITS, capabilities: DEFAULT_CAPABILITIES },
      dataset: [DOUBLE, SUM],
      session: { timeoutMs: 3_000 },
      testTimeoutMs: 2_000,
    });
  });
  afterAll(() => env?.close());

  /** Runs `actions` then `submit double` in a new episode; returns the reward. */
  const episode = async (actions: string[], submit = 'submit double') => {
    await env.reset({ task: 0 });
    for (const action of actions) await env.step(action);
    const end = await env.step(submit);
    return end;
  };

  /** The next episode is clean: nothing defined, the gold scores 1. */
  const expectCleanNext = async () => {
    await env.reset({ task: 0 });
    expect((await env.step('double')).observation).toContain("NameError: name 'double' is not defined");
    await env.step(String(DOUBLE.gold));
    expect((await env.step('submit double')).reward).toBe(1);
  };

  it('control: the wrong submission scores 1/3', async () => {
    expect((await episode([WRONG])).reward).toBeCloseTo(WRONG_REWARD);
  });

  it("patching the test runner (sys.modules['__main__'].Worker.run_case) changes nothing", async () => {
    const patch = [
      'import sys',
      'for _m in list(sys.modules.values()):',
      '    for _name in ("Worker", "Scorer"):',
      '        _cls = getattr(_m, _name, None)',
      '        if isinstance(_cls, type):',
      '            for _attr in ("run_case", "score"):',
      '                if hasattr(_cls, _attr):',
      '                    setattr(_cls, _attr, lambda self, *a, **k: {"output": "", "error": ""} if _attr == "run_case" else {"pred": [{"output": "", "error": ""}] * 3, "gold": [{"output": "", "error": ""}] * 3})',
    ].join('\n');
    expect((await episode([patch, WRONG])).reward).toBeCloseTo(WRONG_REWARD);
    await expectCleanNext();
  }, 60_000);

  it('neutering builtins.exec (so tests and gold both run nothing) changes nothing', async () => {
    const neuter = 'import builtins\nbuiltins.exec = lambda *a, **k: None\nbuiltins.eval = lambda *a, **k: None';
    expect((await episode([WRONG, neuter])).reward).toBeCloseTo(WRONG_REWARD);
    await expectCleanNext();
  }, 60_000);

  it('forged score frames written by the submission into its process\'s streams are never taken as its result', async () => {
    const passes = '[{"output": "", "error": ""}] * 3';
    const forge = WRITE_TO_DRIVER_STREAMS(
      `b"".join(("\\x1eIC" + _nonce + " " + str(len(p)) + "\\n").encode() + p for p in (__import__("json").dumps({"id": i, "pred": ${passes}, "gold": ${passes}}).encode() for i in range(1, 40)))`,
    );
    // The wrong function forges when it is called, i.e. while its tests run: in the scorer's
    // sandbox, into the streams of the submission process (the test's parent), whose nonce
    // is in no argv (a guessed one). The frames land in the submission's result pipe, and the
    // scorer takes no result from a spoilt pipe: every test fails, as the verdicts say (the
    // attack was mounted: a forge that wrote nothing would leave `double` returning None, its
    // tests failed by their assertions, not this). Never the forged passes.
    const body = [...forge.split('\n'), '_mounted = _written > 0'];
    const wrong = `def double(x):\n    _mounted = False\n    try:\n${body.map((l) => '        ' + l).join('\n')}\n    except Exception:\n        pass\n    return x if _mounted else None`;
    const end = await episode([wrong]);
    expect(end.reward).toBe(0);
    const verdicts = (end.info.score?.details.verdicts ?? []) as { got: string }[];
    expect(verdicts.map((v) => v.got)).toEqual(Array(3).fill("the submission's interpreter (its actions replayed) sent no valid result"));
    await expectCleanNext();
  }, 60_000);

  /** `text` indented by `by` (a function's body). */
  const indent = (text: string, by = '    ') => text.split('\n').map((l) => by + l).join('\n');
  /** What a passing MBPP test reports (the gold's outcome for each test). */
  const PASSING = '{"output": "", "error": ""}';
  const TEST_REFUSED = 'the test process sent no valid result';
  const SUBMISSION_REFUSED = "the submission's interpreter (its actions replayed) sent no valid result";

  /**
   * The verdicts of an episode whose forging code ran only once it wrote on a result pipe
   * (else the function returns None and every test fails by its assertion): each verdict is
   * the forged frame's ('passed') or the harness's refusal of the pipe it spoilt; none is
   * what the wrong function itself earns. So the attack was mounted, whatever the scorer did.
   */
  const expectMounted = (end: Awaited<ReturnType<typeof episode>>, refused: string) => {
    const got = ((end.info.score?.details.verdicts ?? []) as { got: string }[]).map((v) => v.got);
    expect(got).toHaveLength(3);
    expect(got.filter((g) => g !== 'passed' && g !== refused)).toEqual([]);
    return got;
  };

  const TAILS = [
    ['then exits', 'if _n:\n    os._exit(0)\nreturn None'],
    ['then returns its wrong value', 'return x if _n else None'],
  ] as const;
  // From the test's process: the pipe its parent reads (its test's), or the one the scorer (its
  // grandparent) reads from the submission process (its parent), with what a pass reports there.
  const PIPES = [
    ["its test's result pipe", 'a passing result frame', 'os.getppid(), os.getpid(), _frame(' + PASSING + ')', TEST_REFUSED],
    ["the submission's result pipe to the scorer", 'a passing results list', '_ppid(os.getppid()), os.getppid(), _frame([' + PASSING + '] * 3)', SUBMISSION_REFUSED],
  ] as const;
  it.each(PIPES.flatMap(([pipe, what, forge, refused]) => TAILS.map(([how, tail]) => [what, pipe, how, forge, refused, tail] as const)))(
    'a submitted function that writes %s on %s (%s) is not taken at its word',
    async (_what, _pipe, _how, forge, refused, tail) => {
      const body = `${FORGE_ON_RESULT_PIPE}\n_n = _forge(${forge})\n${tail}`;
      const end = await episode([`def double(x):\n${indent(body)}`]);
      const got = expectMounted(end, refused);
      expect(end.reward).toBeLessThanOrEqual(WRONG_REWARD);
      expect(got).toEqual(Array(3).fill(refused));
      await expectCleanNext();
    },
    60_000,
  );

  it.each([
    ['then exits', '    os._exit(0)'],
    ['then goes on', '    pass'],
  ])('an action that, replayed by the scorer, writes a passing results list on the submission\'s result pipe (%s) is not taken at its word', async (_how, tail) => {
    // In the agent's sandbox the action does nothing (its parent is the driver); replayed,
    // its process is the submission process, whose parent is the scorer.
    const action = [
      FORGE_ON_RESULT_PIPE,
      'if b"<intercode scorer>" in open(f"/proc/{os.getppid()}/cmdline", "rb").read():',
      `    _n = _forge(os.getppid(), os.getpid(), _frame([${PASSING}] * 3))`,
      tail,
    ].join('\n');
    const end = await episode([action, WRONG]);
    const got = expectMounted(end, SUBMISSION_REFUSED);
    expect(end.reward).toBeLessThanOrEqual(WRONG_REWARD);
    expect(got).toEqual(Array(3).fill(SUBMISSION_REFUSED));
    await expectCleanNext();
  }, 60_000);

  // The result of a test is taken only through a keyed ready line, then a nonce sent once the
  // test's code has returned (envs/python/scorer.py). These attacks go at that exchange.
  /** Python (a function body) that finds this process's result pipe (`_res`: written here, read by the parent) and nonce pipe (`_non`: the reverse). */
  const FIND_MY_PIPES = [
    FORGE_ON_RESULT_PIPE,
    'def _mine(mode):',
    '    theirs = _pipes(os.getppid(), 1 - mode)',
    '    return [int(fd) for t, fd in _pipes(os.getpid(), mode).items() if t in theirs]',
    '_res, _non = _mine(1), _mine(0)',
    'def _send_forged(nonce):',
    `    p = json.dumps(${PASSING}).encode()`,
    '    os.write(_res[0], nonce + b" %d\\n" % len(p) + p)',
    '    os._exit(0)',
  ].join('\n');
  const THREAD_REFUSED = 'the test left a thread running (a result is taken only from a test process running one thread)';

  it('a submitted function that plays the reporter (a ready line of its own, then the nonce it reads) is not taken at its word', async () => {
    // It lacks the key, so its ready line is refused and no nonce ever comes.
    const body = [
      FIND_MY_PIPES,
      'if _res and _non:',
      '    os.write(_res[0], b"%10d " % os.getpid() + b"0" * 64 + b"\\n")',
      '    _send_forged(os.read(_non[0], 32))',
      'return None',
    ].join('\n');
    const end = await episode([`def double(x):\n${indent(body)}`]);
    const got = expectMounted(end, TEST_REFUSED);
    expect(end.reward).toBe(0);
    expect(got).toEqual(Array(3).fill(TEST_REFUSED));
    await expectCleanNext();
  }, 60_000);

  it('a submitted function that leaves a thread waiting for the nonce (to send a passing frame with it) fails its tests', async () => {
    const body = [
      FIND_MY_PIPES,
      'import threading',
      'if _res and _non:',
      '    threading.Thread(target=lambda: _send_forged(os.read(_non[0], 32)), daemon=True).start()',
      '    return x',
      'return None',
    ].join('\n');
    const end = await episode([`def double(x):\n${indent(body)}`]);
    const got = expectMounted(end, THREAD_REFUSED);
    expect(end.reward).toBe(0);
    expect(got).toEqual(Array(3).fill(THREAD_REFUSED));
    await expectCleanNext();
  }, 60_000);

  it.each([
    [
      'a signal handler on an interval timer that watches for the reporter\'s nonce',
      'import signal\ndef _on_alarm(signum, frame):\n    n = frame.f_locals.get("nonce")\n    if isinstance(n, bytes) and len(n) == 32:\n        _send_forged(n)\nsignal.signal(signal.SIGALRM, _on_alarm)\nsignal.setitimer(signal.ITIMER_REAL, 0.0005, 0.0005)\n_armed = signal.getitimer(signal.ITIMER_REAL)[0] > 0',
    ],
    [
      'a trace function that watches for the reporter\'s nonce',
      'import sys\ndef _tracer(frame, event, arg):\n    n = frame.f_locals.get("nonce")\n    if isinstance(n, bytes) and len(n) == 32:\n        _send_forged(n)\n    return _tracer\nsys.settrace(_tracer)\n_armed = sys.gettrace() is _tracer',
    ],
  ])('a submitted function that leaves %s scores as the wrong function it is', async (_what, arm) => {
    // Mounted: the function returns x only once its hook is armed, so it earns exactly 1/3 (the
    // test of 0 passes, the others fail by their assertions); a hook that ran in the reporter
    // would have sent passes for all three. (The trace function wins against a reporter that does
    // not stop hooks, seen by disabling that; the timer's handler seldom lands in the instant the
    // nonce is a local, so its test guards the defence without showing on its own that it is needed.)
    const body = [FIND_MY_PIPES, '_armed = False', 'if _res and _non:', indent(arm), 'return x if _armed else None'].join('\n');
    const end = await episode([`def double(x):\n${indent(body)}`]);
    expect(end.reward).toBeCloseTo(WRONG_REWARD);
    const verdicts = (end.info.score?.details.verdicts ?? []) as { test: string; got: string }[];
    expect(verdicts.find((v) => v.test === 'assert double(0) == 0')?.got).toBe('passed');
    await expectCleanNext();
  }, 60_000);

  it.each([
    ['encoder', 'json._default_encoder.encode = lambda o: _forged if isinstance(o, list) else _was(o)', '_default_encoder'],
    ['decoder', 'json._default_decoder.decode = lambda s: json.loads(_forged)[0] if s.startswith("{") else _was(s)', '_default_decoder'],
  ])("an action that, replayed, replaces json's default %s (which the harness once used to pass results on) scores as the wrong function it is", async (_which, patch, holder) => {
    // Mounted: the submitted function returns x only while the patch is in place in its process.
    const action = [
      'import json, os',
      'if b"<intercode scorer>" in open(f"/proc/{os.getppid()}/cmdline", "rb").read():',
      `    _forged = json.dumps([${PASSING}] * 3)`,
      `    _was = json.${holder}.${holder === '_default_encoder' ? 'encode' : 'decode'}`,
      `    ${patch}`,
    ].join('\n');
    const wrong = `def double(x):\n    import json\n    return x if "${holder === '_default_encoder' ? 'encode' : 'decode'}" in vars(json.${holder}) else None`;
    const end = await episode([action, wrong]);
    expect(end.reward).toBeCloseTo(WRONG_REWARD);
    await expectCleanNext();
  }, 60_000);

  it('replacing /opt/intercode/driver.py and killing the driver does not make the harness run the agent\'s driver', async () => {
    const replace = [
      'import os, signal',
      'path = "/opt/intercode/driver.py"',
      'os.makedirs("/opt/intercode", exist_ok=True)',
      'fake = open("/proc/%d/cmdline" % os.getppid(), "rb").read()',
      // A driver that answers every score request with all tests passed, and otherwise works.
      'src = """',
      'import json, os, sys',
      'nonce = sys.argv[-1]',
      'out = os.fdopen(1, "wb", buffering=0)',
      'def send(obj):',
      '    p = json.dumps(obj).encode()',
      '    out.write(("\\\\x1eIC" + nonce + " " + str(len(p)) + "\\\\n").encode() + p)',
      'send({"ready": True, "python": "3"})',
      'inp = os.fdopen(0, "rb")',
      'while True:',
      '    h = inp.readline()',
      '    if not h: break',
      '    r = json.loads(inp.read(int(h)))',
      '    if r["op"] == "score":',
      '        n = len(r.get("tests", r.get("cases", [])))',
      '        send({"id": r["id"], "pred": [{"output": "", "error": ""}] * n, "gold": [{"output": "", "error": ""}] * n, "results": [{"passed": True, "output": "", "error": ""}] * n})',
      '    else:',
      '        send({"id": r["id"], "executed": True, "output": "", "outputBytes": 0, "strays": 0, "timedOut": False, "outputLimit": False, "restarted": None})',
      '"""',
      'open(path, "w").write(src)',
    ].join('\n');
    await env.reset({ task: 0 });
    await env.step(replace);
    // Garbage on the driver's own stdin: it answers this action, then dies reading the next request.
    await env.step(WRITE_TO_DRIVER_STREAMS('b"garbage\\n"', 'r'));
    // The driver is gone before the next action: that action starts a new one.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const next = await env.step(WRONG);
    expect(next.observation).toContain('a new one was started');
    expect((await env.step('submit double')).reward).toBeCloseTo(WRONG_REWARD);
    await expectCleanNext();
  }, 60_000);

  it('a malformed frame on the driver\'s stream ends the episode truncated; the host lives on and the next episode is clean', async () => {
    await env.reset({ task: 0 });
    const forged = await env.step(MALFORMED_FRAME_ACTION);
    expect(forged.truncated).toBe(true);
    expect(forged.info.truncation?.reason).toBe('sandbox-lost');
    expect(forged.info.truncation?.message).toMatch(/not JSON/);
    await expectCleanNext();
  }, 60_000);

  it('APPS: a submission that patches the runner scores what it deserves', async () => {
    await env.reset({ task: 1 });
    await env.step('def main():\n    print(3)');
    await env.step(
      'import sys\nfor _m in list(sys.modules.values()):\n    _cls = getattr(_m, "Worker", None)\n    if isinstance(_cls, type):\n        _cls.run_case = lambda self, *a, **k: {"passed": True, "output": "", "error": ""}',
    );
    const end = await env.step('submit main');
    expect(end.reward).toBe(0.5);
  }, 60_000);

  it('a process an action left (killed in the agent\'s sandbox) is killed after the action in the replay too: the gold scores 1', async () => {
    const left = await episode(['import os, time\nif os.fork() == 0:\n    time.sleep(600)\n    os._exit(0)', String(DOUBLE.gold)]);
    expect(left.reward).toBe(1);
  }, 60_000);

  const KILL_SCORER = [
    'import os, signal',
    'for _p in os.listdir("/proc"):',
    '    if _p.isdigit():',
    '        try:',
    '            _c = open(f"/proc/{_p}/cmdline", "rb").read()',
    '        except OSError:',
    '            continue',
    '        if b"<intercode scorer>" in _c:',
    '            os.kill(int(_p), signal.SIGKILL)',
  ].join('\n');

  it('a submission that kills the scorer while its tests run fails them (reward 0), and is not let off as a lost sandbox', async () => {
    const wrong = `def double(x):\n${KILL_SCORER.split('\n').map((l) => '    ' + l).join('\n')}\n    return 2 * x`;
    const end = await episode([wrong]);
    expect(end.truncated).toBe(false);
    expect(end.terminated).toBe(true);
    expect(end.reward).toBe(0);
    await expectCleanNext();
  }, 60_000);

  it('an action that kills the scorer when replayed scores 0, not a lost sandbox', async () => {
    const end = await episode([KILL_SCORER, String(DOUBLE.gold)]);
    expect(end.truncated).toBe(false);
    expect(end.reward).toBe(0);
    await expectCleanNext();
  }, 60_000);

  it('a submission that stops the scorer (SIGSTOP) fails its tests once the scorer\'s deadline passes, and is not let off as a lost sandbox', async () => {
    const stop = KILL_SCORER.replace('signal.SIGKILL', 'signal.SIGSTOP');
    const wrong = `def double(x):\n${stop.split('\n').map((l) => '    ' + l).join('\n')}\n    return 2 * x`;
    const end = await episode([wrong]);
    expect(end.truncated).toBe(false);
    expect(end.reward).toBe(0);
    expect(JSON.stringify(end.info.score?.details)).toMatch(/stopped the scorer/);
  }, 120_000);

  it.each([
    ['an object equal to everything', 'class E:\n        def __eq__(self, other): return True\n        def __ne__(self, other): return False\n    return E()'],
    ['an int whose == is the submission\'s', 'class I(int):\n        def __eq__(self, other): return True\n        __hash__ = int.__hash__\n    return I(x)'],
    ['an object whose == answers a truthy string', 'class E:\n        def __eq__(self, other): return "yes"\n    return E()'],
    ['a float whose conversion is the submission\'s (read by math.isclose)', 'class F(float):\n        def __float__(self): return 2.0 * x\n        def __eq__(self, other): return float(self) == other\n    return F(0)'],
    ['a class made by type() with a lambda for ==', 'return type("E", (), {"__eq__": lambda self, other: True})()'],
  ])('a result that is %s does not pass the tests (it scores 0, as what it really returns)', async (_what, body) => {
    const end = await episode([`def double(x):\n    ${body}`]);
    expect(end.truncated).toBe(false);
    expect(end.reward).toBe(0);
    expect(JSON.stringify(end.info.score?.details)).toMatch(/compared by the submission's own code/);
  }, 60_000);

  it('a result of a subclass that leaves comparing to its base (an int subclass, a namedtuple) passes as its value does', async () => {
    const end = await episode(['import collections\nP = collections.namedtuple("P", "v")\nclass I(int):\n    pass\ndef double(x):\n    return I(P(2 * x).v)']);
    expect(end.reward).toBe(1);
  }, 60_000);

  it('a frame claiming a terabyte on the driver\'s stream ends the episode at once (nothing buffered toward it)', async () => {
    await env.reset({ task: 0 });
    const flood = WRITE_TO_DRIVER_STREAMS('("\\x1eIC" + _nonce + " " + str(1 << 40) + "\\n").encode() + b"x" * (8 << 20)') + '\nimport time\ntime.sleep(0.5)';
    const started = performance.now();
    const end = await env.step(flood);
    expect(end.truncated).toBe(true);
    expect(end.info.truncation?.message).toMatch(/more than the limit/);
    expect(performance.now() - started).toBeLessThan(8_000);
    await expectCleanNext();
  }, 60_000);

  it.each([
    ['ast.parse, which rewrites each test', 'import ast\n_parse = ast.parse\nast.parse = lambda *a, **k: _parse("pass")', 'type(__import__("ast").parse("x").body[0]).__name__ == "Pass"'],
    ["compile, which compiles each rewritten test and the task's setup", 'import builtins\n_compile = builtins.compile\nbuiltins.compile = lambda *a, **k: _compile("pass", "<test>", "exec")', 'eval(compile("1", "<t>", "eval")) is None'],
    ["ast's tree walk, which the rewriter's visits go through", 'import ast\nast.iter_fields = lambda node: iter(())', 'list(__import__("ast").iter_fields(__import__("ast").parse("x"))) == []'],
  ])('an action replacing %s does not choose the test that runs', async (_what, patch, inPlace) => {
    // Where the replacement is in place when its tests call it, the wrong function returns an
    // object equal to anything for 2 and -3 (a test that ran unchecked, or not at all, passes)
    // and 0 for 0; elsewhere None, failing all three. So 1/3 shows the attack was mounted and
    // the tests ran as written, checked; 1.0 would be the attack's win.
    const wrong = `class _Equal:\n    __eq__ = lambda self, other: True\n\ndef double(x):\n    return (_Equal() if x else x) if ${inPlace} else None`;
    expect((await episode([wrong, patch])).reward).toBeCloseTo(WRONG_REWARD);
    await expectCleanNext();
  }, 60_000);
});
