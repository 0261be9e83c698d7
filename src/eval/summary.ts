import { sumUsage, type EpisodeUsage } from '../agents/index.js';
import { isSolved } from '../scoring/solved.js';
import { countByReason, meanOfScored } from '../policy/index.js';
import type { EvalEpisodeLog } from './result-log.js';


export interface GroupSummary {
  episodes: number;
  /** Share of episodes whose best reward is 1 (0..1). */
  successRate: number;
  /** Mean of the scored episodes' best rewards (those with `not_scored` left out); null when none was scored. */
  avgMaxReward: number | null;
}

/** The paper's figures over a run (rates are fractions 0..1). */
export interface EvalSummary extends GroupSummary {
  /** Mean turns the model took (the runner's own submit at the turn limit not counted). */
  avgTurns: number;
  /** Share of the model's turns whose reply held no action or whose action failed to run. */
  invalidActionRate: number;
  /** The same figures per `hardness` of the tasks (Spider's easy/medium/hard/extra); {} when tasks have none. */
  byHardness: Record<string, GroupSummary>;
  /** Episodes cut off mid-way (the sandbox lost, the verifier gave no reward…). */
  truncated: number;
  /** Episodes cut off before any turn was scored: left out of `avgMaxReward`. */
  notScored: number;
  /** `notScored` by `info.truncation`'s reason (`reward-missing`, `sandbox-lost`…). */
  notScoredByReason: Record<string, number>;
  usage: EpisodeUsage;
}

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

function group(episodes: readonly EvalEpisodeLog[]): GroupSummary {
  return {
    episodes: episodes.length,
    successRate: mean(episodes.map((e) => (isSolved(e.summary.max_reward) ? 1 : 0))),
    avgMaxReward: meanOfScored(episodes.map((e) => ({ reward: e.not_scored ? null : e.summary.max_reward }))),
  };
}

export function summarize(episodes: readonly EvalEpisodeLog[]): EvalSummary {
  const modelTurns = episodes.flatMap((e) => e.turn_history.valid_action.slice(0, e.summary.turns_taken));
  const hardness = new Map<string, EvalEpisodeLog[]>();
  for (const e of episodes) {
    if (e.hardness === undefined) continue;
    hardness.set(e.hardness, [...(hardness.get(e.hardness) ?? []), e]);
  }
  return {
    ...group(episodes),
    avgTurns: mean(episodes.map((e) => e.summary.turns_taken)),
    invalidActionRate: mean(modelTurns.map((valid) => (valid ? 0 : 1))),
    byHardness: Object.fromEntries([...hardness].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, group(v)])),
    truncated: episodes.filter((e) => e.truncated !== undefined).length,
    notScored: episodes.filter((e) => e.not_scored).length,
    notScoredByReason: countByReason(episodes.flatMap((e) => (e.not_scored ? [e.not_scored] : []))),
    usage: sumUsage(episodes.map((e) => e.usage)),
  };
}
