/**
 * What InterCode's evaluation scripts scored after each action under the `every-step`
 * protocol (single turn, Try Again, Plan & Solve): each env gives its rule. Bash, SQL and
 * CTF: `submit` as it is, with every effect of the actions so far in place
 * ({@link SUBMIT_AS_IS}). Python (`eval_n_turn.py`): an action starting with `def name(`
 * was run and followed by `submit name`; any other action was run and not scored (reward 0).
 */
export type StepScoring = { kind: 'submit'; submission?: string } | { kind: 'unscored' };

/** An env's every-step rule: what is scored after `action`. */
export type StepScoringRule = (action: string) => StepScoring;

/** `submit` as it is, after every action. */
export const SUBMIT_AS_IS: StepScoringRule = () => ({ kind: 'submit' });
