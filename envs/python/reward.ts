import type { AppsOutcome, MbppOutcome } from './python-scorer.js';

export interface TestVerdict {
  test: string;
  passed: boolean;
  /** What the submission did: its error, or its printed output when that differs. */
  got: string;
  expected: string;
}

export interface PythonReward {
  reward: number;
  passed: number;
  total: number;
  verdicts: TestVerdict[];
}

/** Two outcomes agree when they have the same `output` and `error` (InterCode compared the result dicts). */
function sameOutcome(a: MbppOutcome, b: MbppOutcome): boolean {
  return a.output === b.output && a.error === b.error;
}

function describe(outcome: MbppOutcome): string {
  if (outcome.error) return outcome.detail ?? outcome.error;
  return outcome.output ? `printed ${JSON.stringify(outcome.output.slice(0, 200))}` : 'passed';
}

/**
 * InterCode's MBPP reward: the share of tests whose outcome for the submission equals the
 * gold solution's. Outcomes are keyed by the test's text, as InterCode kept them in a dict:
 * a test listed twice counts once, with its last outcome.
 */
export function mbppReward(tests: readonly string[], pred: readonly MbppOutcome[], gold: readonly MbppOutcome[]): PythonReward {
  const byTest = new Map<string, { pred: MbppOutcome; gold: MbppOutcome }>();
  tests.forEach((test, i) => byTest.set(test, { pred: pred[i]!, gold: gold[i]! }));
  const verdicts = [...byTest].map(([test, r]) => ({
    test,
    passed: sameOutcome(r.pred, r.gold),
    got: describe(r.pred),
    expected: describe(r.gold),
  }));
  const passed = verdicts.filter((v) => v.passed).length;
  return { reward: passed / verdicts.length, passed, total: verdicts.length, verdicts };
}

/** APPS: the share of stdin/stdout cases the submission passed. */
export function appsReward(cases: readonly { input: string; output: string }[], results: readonly AppsOutcome[]): PythonReward {
  const verdicts = cases.map((c, i) => {
    const r = results[i]!;
    return {
      test: `stdin ${JSON.stringify(c.input.slice(0, 200))}`,
      passed: r.passed,
      got: r.error || JSON.stringify(r.output.slice(0, 200)),
      expected: JSON.stringify(c.output.slice(0, 200)),
    };
  });
  const passed = verdicts.filter((v) => v.passed).length;
  return { reward: passed / verdicts.length, passed, total: verdicts.length, verdicts };
}
