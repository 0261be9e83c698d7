import { oneOf } from '../../src/errors.js';
import type { RecordedEpisode } from '../../src/trajectory/index.js';

/**
 * Which part of the gold command's output the answer term compares with the agent's last
 * output. `full`: all of it (InterCode's published code). `tail`: its last n characters,
 * n the length of the agent's output, and all of it when the agent printed nothing — what
 * Python's `gold[-len(agent):]` gives. The scoring that made InterCode's recorded Try Again
 * logs of fs-1 and fs-3 did this: their `info.eval_obs` is the gold output cut so
 * (fs-3 task 4 logs `"e\n/workspace/dir1\n/workspace/dir2\n"` for a gold that prints
 * `/workspace` first, and its similarity 1.0 fits only the cut text), while their other
 * recordings (fs-4, Plan & Solve) keep gold outputs longer than the agent's.
 */
export type ComparedGoldOutput = 'full' | 'tail';
export const COMPARED_GOLD_OUTPUTS: readonly ComparedGoldOutput[] = ['full', 'tail'];

/** Checks an `--eval-obs` value. @throws ConfigError naming the flag and the known modes. */
export function parseComparedGoldOutput(value: string, option = '--eval-obs'): ComparedGoldOutput {
  return oneOf(option, value, COMPARED_GOLD_OUTPUTS);
}

const ASCII = /^[\x00-\x7f]*$/;

/** Length in code points, as Python counts a str. */
const codePoints = (text: string) => (ASCII.test(text) ? text.length : Array.from(text).length);

/** The gold output the answer term sees under `mode` (see {@link ComparedGoldOutput}). */
export function comparedGoldOutput(gold: string | null, agent: string | null, mode: ComparedGoldOutput): string | null {
  if (mode === 'full' || gold === null || agent === null) return gold;
  const n = codePoints(agent);
  if (n === 0 || n >= codePoints(gold)) return gold;
  return ASCII.test(gold) ? gold.slice(gold.length - n) : Array.from(gold).slice(-n).join('');
}

/** What {@link detectComparedGoldOutput} found, and the episodes that show it. */
export interface ComparedGoldOutputEvidence {
  mode: ComparedGoldOutput;
  /** Episodes whose recorded gold output differs from the agent's and has exactly its length (the cut's mark). */
  cut: number;
  /** Episodes whose recorded gold output is longer than a non-empty agent output (impossible under `tail`). */
  longer: number;
}

/**
 * Reads from a recording's final `info.agent_obs` / `info.eval_obs` pairs which gold output
 * its scoring compared: `tail` when some recorded gold outputs were cut to the agent's
 * length and none is longer than a non-empty agent output, else `full`.
 */
export function detectComparedGoldOutput(episodes: readonly RecordedEpisode[]): ComparedGoldOutputEvidence {
  let cut = 0;
  let longer = 0;
  for (const episode of episodes) {
    const info = (episode.raw as { info?: { agent_obs?: unknown; eval_obs?: unknown } } | undefined)?.info;
    const agent = info?.agent_obs;
    const gold = info?.eval_obs;
    if (typeof agent !== 'string' || typeof gold !== 'string' || agent === gold) continue;
    const a = codePoints(agent);
    const g = codePoints(gold);
    if (a > 0 && g === a) cut += 1;
    else if (a > 0 && g > a) longer += 1;
  }
  return { mode: cut > 0 && longer === 0 ? 'tail' : 'full', cut, longer };
}
