/**
 * Episodes that ended without a reward. An episode cut off (`truncated`: the verifier timed
 * out or wrote no number, the sandbox was lost, the disk limit was passed, the turn limit
 * came without a submit) carries reward 0 only because a step result needs a number: that
 * 0 is no score. Commands that print or average rewards show such an episode as not scored,
 * with its reason, and leave it out of their means.
 */
import type { Rollout } from './rollout.js';

/** Why an episode got no reward: `info.truncation`'s reason (`reward-missing`, `sandbox-lost`, …) and message. */
export interface Unscored {
  reason: string;
  message: string;
}

/** The reason given to a rollout cut off by its own turn limit, without a submit (no step says why). */
export const TURN_LIMIT_REASON = 'turn-limit';

/** Why `played` got no reward, or undefined when it was scored (it ended terminated). */
export function unscoredRollout(played: Pick<Rollout, 'truncated' | 'truncation' | 'turns'>): Unscored | undefined {
  if (!played.truncated) return undefined;
  const cut = played.turns.at(-1)?.info.truncation;
  return cut ? { reason: cut.reason, message: cut.message } : { reason: TURN_LIMIT_REASON, message: played.truncation ?? 'truncated' };
}

/** Not-scored episodes counted by reason, reasons in alphabetical order. */
export function countByReason(unscored: readonly Unscored[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const reason of unscored.map((u) => u.reason).sort()) counts[reason] = (counts[reason] ?? 0) + 1;
  return counts;
}

/** `3 not scored (reward-missing 2, verifier-timeout 1)`; '' when there are none. */
export function describeUnscored(counts: Readonly<Record<string, number>>): string {
  const entries = Object.entries(counts);
  if (entries.length === 0) return '';
  const total = entries.reduce((sum, [, n]) => sum + n, 0);
  return `${total} not scored (${entries.map(([reason, n]) => `${reason} ${n}`).join(', ')})`;
}

/** The mean of the scored episodes' rewards; null when none was scored. */
export function meanOfScored(episodes: readonly { reward: number | null }[]): number | null {
  const scored = episodes.filter((e): e is { reward: number } => e.reward !== null);
  return scored.length === 0 ? null : scored.reduce((sum, e) => sum + e.reward, 0) / scored.length;
}
