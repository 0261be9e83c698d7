import { goldText, type Task } from '../../src/datasets/index.js';
import { DatasetError } from '../../src/errors.js';

/**
 * A Python task in one of two styles. MBPP: `tests` is a list of statements (assert lines)
 * that call the gold function; `test_setup_code` runs before them. APPS: stdin/stdout
 * cases, as `tests: [{input, output}]` or APPS's own `input_output` ({inputs, outputs},
 * possibly as a JSON string); the gold is a whole program.
 */
export type PythonTask =
  | { kind: 'mbpp'; gold: string; tests: string[]; setup: string }
  | { kind: 'apps'; gold: string; cases: { input: string; output: string }[] };

/**
 * Which gold function a submission is bound to. `tested`: the first function the gold
 * defines that a test calls (else its first). `first-def`: InterCode's rule, the first
 * match of `def (\w+)\(` anywhere in the gold — a `def name (…)` with a space is skipped
 * (for golds with helpers defined first, such as MBPP task 17, that binds the submission
 * to a helper); a gold with no such match (InterCode's scoring crashed on those) falls
 * back to its first `def`.
 */
export type EntryRule = 'tested' | 'first-def';

const DEF = /^[ \t]*def\s+([A-Za-z_]\w*)\s*\(/gm;
const INTERCODE_DEF = /def (\w+)\(/;

/** Names of the functions `source` defines with `def`, in order. */
export function definedFunctions(source: string): string[] {
  return [...source.matchAll(DEF)].map((m) => m[1]!);
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The gold function a submission stands in for, under `rule`; undefined when the gold defines none. */
export function goldEntry(task: Extract<PythonTask, { kind: 'mbpp' }>, rule: EntryRule): string | undefined {
  const names = definedFunctions(task.gold);
  if (rule === 'first-def') return INTERCODE_DEF.exec(task.gold)?.[1] ?? names[0];
  return names.find((name) => task.tests.some((t) => new RegExp(`\\b${escapeRegExp(name)}\\s*\\(`).test(t))) ?? names[0];
}

function stringList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}

function appsCases(task: Task, fail: (field: string, problem: string) => never): { input: string; output: string }[] | undefined {
  const tests = task.metadata.tests;
  if (Array.isArray(tests) && tests.length > 0 && typeof tests[0] === 'object' && tests[0] !== null) {
    return tests.map((t, i) => {
      const c = t as Record<string, unknown>;
      if (typeof c.input !== 'string' || typeof c.output !== 'string') fail('tests', `case ${i + 1} needs string fields "input" and "output"`);
      return { input: c.input, output: c.output };
    });
  }
  let io = task.metadata.input_output;
  if (io === undefined) return undefined;
  if (typeof io === 'string') {
    try {
      io = JSON.parse(io);
    } catch {
      fail('input_output', 'is a string but not JSON');
    }
  }
  const { inputs, outputs } = (io ?? {}) as { inputs?: unknown; outputs?: unknown };
  if (!stringList(inputs) || !stringList(outputs) || inputs.length !== outputs.length || inputs.length === 0) {
    fail('input_output', 'must hold "inputs" and "outputs": non-empty lists of strings of the same length');
  }
  return inputs.map((input, i) => ({ input, output: outputs[i]! }));
}

/**
 * Reads a task's Python fields.
 * @param file the dataset file, for error messages.
 * @throws DatasetError naming the file, record and field when the task has neither MBPP
 *   tests (a non-empty list of strings) nor APPS cases, or when they are malformed.
 */
export function toPythonTask(task: Task, file: string): PythonTask {
  const fail = (field: string, problem: string): never => {
    throw new DatasetError({ file, record: task.index + 1, field }, problem);
  };
  const gold = goldText(task, '\n');
  const cases = appsCases(task, fail);
  if (cases) return { kind: 'apps', gold, cases };
  const tests = task.metadata.tests;
  if (!stringList(tests) || tests.length === 0) fail('tests', 'must be a non-empty list of test statements (MBPP) or of {input, output} cases (APPS)');
  const setup = task.metadata.test_setup_code ?? '';
  if (typeof setup !== 'string') fail('test_setup_code', 'must be a string');
  const mbpp = { kind: 'mbpp' as const, gold, tests: tests as string[], setup: setup as string };
  if (definedFunctions(gold).length === 0) fail('gold', 'defines no function (`def name(...)`)');
  return mbpp;
}
