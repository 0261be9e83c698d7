/**
 * What InterCode's evaluation scripts scored after each action under the `every-step`
 * protocol (single turn, Try Again, Plan & Solve). Bash, SQL and CTF: `submit` as it is,
 * with every effect of the actions so far in place. Python (`eval_n_turn.py`): an action
 * starting with `def name(` was run and followed by `submit name`; any other action was
 * run and not scored (reward 0).
 */
export type StepScoring = { kind: 'submit'; submission?: string } | { kind: 'unscored' };

/** InterCode's test for a Python action that defines a function: its first line, exactly `def <name>(`. */
const DEFINES_FUNCTION = /^def (\w+)\(/;

export function stepScoring(envName: string, action: string): StepScoring {
  if (envName !== 'python') return { kind: 'submit' };
  const defined = DEFINES_FUNCTION.exec(action)?.[1];
  return defined === undefined ? { kind: 'unscored' } : { kind: 'submit', submission: defined };
}
