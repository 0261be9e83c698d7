/**
 * Python env without Docker: InterCode's MBPP reward semantics, the APPS reward, which
 * gold function a submission is bound to, task validation, the built-in dataset's shape,
 * and replay's detection of Python logs.
 */
import { describe, expect, it } from 'vitest';
import { appsReward, mbppReward } from '../../envs/python/reward.js';
import { definedFunctions, goldEntry, toPythonTask } from '../../envs/python/python-task.js';
import { BUILTIN_PYTHON_TASKS } from '../../envs/python/index.js';
import { pythonPlugin } from '../../envs/python/plugin.js';
import { loadDataset, type Task } from '../../src/datasets/index.js';
import { DatasetError } from '../../src/errors.js';
import { detectProtocol } from '../../src/replay/replay.js';

const pass = { output: '', error: '' };
const assertionFailed = { error: 'Error: ', detail: 'AssertionError' };

const task = (metadata: Record<string, unknown>, gold = 'def f(x):\n    return x'): Task => ({ index: 4, id: 't', query: 'q', gold, metadata });

describe('mbppReward (InterCode: share of tests whose outcome equals the gold\'s)', () => {
  it('counts matching outcomes, the detail field aside', () => {
    const r = mbppReward(['a', 'b', 'c'], [pass, assertionFailed, { error: 'Error: ', detail: 'other words' }], [pass, pass, assertionFailed]);
    expect(r.reward).toBeCloseTo(2 / 3);
    expect(r.verdicts.map((v) => v.passed)).toEqual([true, false, true]);
  });
  it('keys outcomes by test text: a test listed twice counts once, with its last outcome', () => {
    const r = mbppReward(['a', 'b', 'a'], [assertionFailed, pass, pass], [pass, pass, pass]);
    expect(r.total).toBe(2);
    expect(r.reward).toBe(1);
  });
  it('treats printed output as part of the outcome', () => {
    expect(mbppReward(['a'], [{ output: 'debug', error: '' }], [pass]).reward).toBe(0);
  });
  it('agrees with a gold that fails the same way', () => {
    expect(mbppReward(['a'], [assertionFailed], [{ error: 'Error: ' }]).reward).toBe(1);
  });
});

describe('appsReward', () => {
  it('is the share of cases passed and reports what the submission printed', () => {
    const cases = [{ input: '1\n', output: '2\n' }, { input: '2\n', output: '4\n' }];
    const r = appsReward(cases, [{ passed: true, output: '2\n', error: '' }, { passed: false, output: '5\n', error: '' }]);
    expect(r.reward).toBe(0.5);
    expect(r.verdicts[1]!.got).toBe('"5\\n"');
  });
});

describe('goldEntry', () => {
  const python = { kind: 'mbpp' as const, gold: 'def helper(x):\n    return x\ndef solve(a):\n    return helper(a)', tests: ['assert solve(1) == 1'], setup: '' };
  it('binds to the function the tests call by default, to the first def as InterCode did', () => {
    expect(goldEntry(python, 'tested')).toBe('solve');
    expect(goldEntry(python, 'first-def')).toBe('helper');
  });
  it('skips `def name (` in the first-def rule as InterCode\'s regex did, falling back when nothing else matches', () => {
    const spaced = { ...python, gold: 'def helper (x):\n    return x\ndef solve(a):\n    return helper(a)\ndef other(b):\n    return b' };
    expect(goldEntry(spaced, 'first-def')).toBe('solve');
    expect(goldEntry({ ...python, gold: 'def only (x):\n    return x' }, 'first-def')).toBe('only');
  });
  it('finds defs written with a space before the parenthesis and indented methods', () => {
    expect(definedFunctions('class A:\n\tdef __init__ (self): pass\ndef g (): pass')).toEqual(['__init__', 'g']);
  });
});

describe('toPythonTask', () => {
  it('reads MBPP tests and setup code', () => {
    expect(toPythonTask(task({ tests: ['assert f(1) == 1'], test_setup_code: 'X = 1' }), 'f.json')).toEqual({
      kind: 'mbpp', gold: 'def f(x):\n    return x', tests: ['assert f(1) == 1'], setup: 'X = 1',
    });
  });
  it('reads APPS cases as a list or as APPS input_output JSON', () => {
    expect(toPythonTask(task({ tests: [{ input: '1', output: '1' }] }, 'print(input())'), 'f.json')).toMatchObject({ kind: 'apps', cases: [{ input: '1', output: '1' }] });
    expect(toPythonTask(task({ input_output: JSON.stringify({ inputs: ['a'], outputs: ['b'] }) }, 'x'), 'f.json')).toMatchObject({ kind: 'apps', cases: [{ input: 'a', output: 'b' }] });
  });
  it.each([
    [{}, 'tests'],
    [{ tests: [] }, 'tests'],
    [{ tests: [{ input: 1, output: '1' }] }, 'tests'],
    [{ input_output: '{not json' }, 'input_output'],
    [{ tests: ['assert f(1)'], test_setup_code: 3 }, 'test_setup_code'],
  ])('rejects %j naming file, record and field %s', (metadata, field) => {
    const error = (() => {
      try {
        toPythonTask(task(metadata), 'tasks.json');
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(DatasetError);
    expect((error as DatasetError).location).toEqual({ file: 'tasks.json', record: 5, field });
  });
  it('rejects an MBPP gold that defines no function', () => {
    expect(() => toPythonTask(task({ tests: ['assert x'] }, 'x = 1'), 'tasks.json')).toThrow(/gold.*defines no function/);
  });
});

describe('built-in Python tasks', () => {
  it('has at least 20 tasks, every one with tests and a gold policy ending in submit <function>', async () => {
    const tasks = await loadDataset(BUILTIN_PYTHON_TASKS);
    expect(tasks.length).toBeGreaterThanOrEqual(20);
    const styles = tasks.map((t) => toPythonTask(t, BUILTIN_PYTHON_TASKS).kind);
    expect(styles).toContain('mbpp');
    expect(styles).toContain('apps');
    for (const t of tasks) expect(pythonPlugin.goldActions(t).at(-1)).toMatch(/^submit \w+$/);
  });
});

describe('detectProtocol for Python logs', () => {
  it('recognises InterCode Python logs by their environment field', () => {
    const episode = { taskIndex: 0, query: 'q', actions: ['def f(x):\n    return x'], observations: [''], rewards: [1], validActions: [true], noCode: [false], blockedTurns: 0, maxReward: 1, raw: { environment: 'ic_python' } };
    expect(detectProtocol([episode])).toBe('def-submit');
  });
});
