import type { Score } from '../../src/env/types.js';

/** `submit` followed by white space or the end of the action; what follows is the flag. */
const SUBMIT = /^\s*submit(?:\s+([\s\S]*))?$/;

/**
 * The flag an action submits, or `undefined` when the action is not a submission. The
 * flag is the rest of the line after `submit`, trimmed of white space; quotes and spaces
 * inside it are kept (`submit flag{a b}` submits `flag{a b}`). A bare `submit` submits
 * the empty flag.
 */
export function submittedFlag(action: string): string | undefined {
  const match = SUBMIT.exec(action);
  if (!match) return undefined;
  return (match[1] ?? '').trim();
}

/** InterCode's CTF reward: 1 when the flag equals the gold flag ignoring case, else 0. */
export function flagScore(flag: string, gold: string): Score {
  const correct = flag.toLowerCase() === gold.toLowerCase();
  return { reward: correct ? 1 : 0, parts: { flag: correct ? 1 : 0 }, details: { agent_obs: flag, correct } };
}
