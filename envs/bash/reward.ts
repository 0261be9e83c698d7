import { answerSimilarity } from '../../src/scoring/tfidf.js';
import { erf } from '../../src/scoring/erf.js';
import { pyRound } from '../../src/scoring/pyround.js';
import type { WorkerFunction } from '../../src/workers/cpu-workers.js';

/** One line of `git status --short`, as InterCode paired them: [path, status]. */
export type FileChange = readonly [path: string, status: string];

/** What one side (agent or gold) left behind, gathered from its sandbox. */
export interface BashOutcome {
  /** The last observation (the agent's last action output; the gold command's output). */
  observation: string | null;
  changes: readonly FileChange[];
  /** md5 results for the paths both sides added, keyed by path. */
  hashes: ReadonlyMap<string, string>;
}

export interface BashRewardResult {
  reward: number;
  parts: { file_diff: number; file_changes: number; answer_similarity: number };
  info: {
    diff_miss: FileChange[];
    diff_extra: FileChange[];
    diff_same?: { files: FileChange[]; correct: number; total: number };
    answer_similarity: number;
  };
}

/**
 * Parses `git status --short` the way InterCode did: split on any white space and pair
 * the words as (status, path). A path with spaces therefore splits — as in the original.
 */
export function parseGitStatus(status: string): FileChange[] {
  const words = status.split(/\s+/).filter((w) => w !== '');
  const changes: FileChange[] = [];
  for (let i = 0; i + 1 < words.length; i += 2) changes.push([words[i + 1]!, words[i]!]);
  return changes;
}

const key = (change: FileChange) => `${change[1]}\0${change[0]}`;

function distinct(changes: readonly FileChange[]): Map<string, FileChange> {
  return new Map(changes.map((c) => [key(c), c]));
}

/** A change that added a path (git's A, ??, C): the kind whose contents are compared. */
export const isAddition = (change: FileChange): boolean => ['A', '??', 'C'].includes(change[1]);

/** Changes both sides made that added a path: the ones whose contents are compared. */
export function sharedAdditions(agent: readonly FileChange[], gold: readonly FileChange[]): FileChange[] {
  const goldKeys = distinct(gold);
  return [...distinct(agent).values()].filter((c) => goldKeys.has(key(c)) && isAddition(c));
}

/**
 * InterCode's bash reward: 0.01 + file-diff term + file-content term + answer term, each
 * rounded to 2 places and added in that order (so 0.8400000000000001 can occur).
 * - file diff: 0.33·(1 − erf(#changes made by only one side));
 * - file content: 0.33 × share of shared additions whose md5 results agree (0.33 if none);
 * - answer: 0.33 × TF-IDF cosine of the two observations (scikit-learn defaults).
 */
export function bashReward(agent: BashOutcome, gold: BashOutcome): BashRewardResult {
  const agentSet = distinct(agent.changes);
  const goldSet = distinct(gold.changes);
  const diffMiss = [...goldSet.values()].filter((c) => !agentSet.has(key(c)));
  const diffExtra = [...agentSet.values()].filter((c) => !goldSet.has(key(c)));
  const fileDiff = pyRound(0.33 * (1 - erf(diffMiss.length + diffExtra.length)), 2);

  let fileChanges = 0.33;
  const same = sharedAdditions(agent.changes, gold.changes);
  let diffSame: BashRewardResult['info']['diff_same'];
  if (same.length > 0) {
    const correct = same.filter(([path]) => agent.hashes.get(path) === gold.hashes.get(path)).length;
    diffSame = { files: same, correct, total: same.length };
    fileChanges = pyRound(0.33 * (correct / same.length), 2);
  }

  const similarity = answerSimilarity(agent.observation, gold.observation);
  const answer = pyRound(0.33 * similarity, 2);

  let reward = 0.01;
  reward += fileDiff;
  reward += fileChanges;
  reward += answer;
  return {
    reward,
    parts: { file_diff: fileDiff, file_changes: fileChanges, answer_similarity: answer },
    info: { diff_miss: diffMiss, diff_extra: diffExtra, ...(diffSame ? { diff_same: diffSame } : {}), answer_similarity: similarity },
  };
}

/** {@link bashReward} for worker threads (piscina calls the export by its name). */
export function bashRewardTask({ agent, gold }: { agent: BashOutcome; gold: BashOutcome }): BashRewardResult {
  return bashReward(agent, gold);
}

export const BASH_REWARD: WorkerFunction<{ agent: BashOutcome; gold: BashOutcome }, BashRewardResult> = {
  module: 'envs/bash/reward.js',
  name: 'bashRewardTask',
  run: bashRewardTask,
};
