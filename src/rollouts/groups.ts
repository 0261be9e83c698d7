/** Group-normalized advantages (GRPO-style groups: several samples of one task). */

export interface GroupStats {
  mean: number;
  /** Population standard deviation of the group's rewards. */
  std: number;
  /** One per sample, in order: reward − mean, divided by (std + 1e-6) when scaled. */
  advantages: number[];
}

/** Below this the group's rewards are taken as all equal (advantages 0). */
const EPSILON = 1e-6;

/** The advantages of a group's rewards: mean-centred, and std-scaled when `scale` (0 for all when the rewards are equal). */
export function groupAdvantages(rewards: readonly number[], scale: boolean): GroupStats {
  if (rewards.length === 0) return { mean: 0, std: 0, advantages: [] };
  const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
  const std = Math.sqrt(rewards.reduce((a, r) => a + (r - mean) ** 2, 0) / rewards.length);
  const advantages = rewards.map((r) => {
    const centred = r - mean;
    if (Math.abs(centred) < 1e-12) return 0;
    return scale ? centred / (std + EPSILON) : centred;
  });
  return { mean, std, advantages };
}
