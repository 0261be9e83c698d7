/**
 * InterCode's bash reward (envs/bash/reward.ts) against hand-computed values, and — when
 * the reference data exists — against the rewards InterCode recorded in its own logs.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { bashReward, parseGitStatus, sharedAdditions, type BashOutcome, type FileChange } from '../../envs/bash/reward.js';
import { answerSimilarity, pyRound } from '../../src/scoring/index.js';

const outcome = (observation: string | null, changes: FileChange[] = [], hashes: Record<string, string> = {}): BashOutcome => ({
  observation,
  changes,
  hashes: new Map(Object.entries(hashes)),
});

const MD5_A = 'd41d8cd98f00b204e9800998ecf8427e  testbed/a.txt\n';
const MD5_B = '0cc175b9c0f1b6a831c399e269772661  testbed/a.txt\n';

describe('parseGitStatus', () => {
  it('pairs the words of `git status --short` as [path, status]', () => {
    expect(parseGitStatus(' M testbed/a.txt\n?? testbed/new/\nD  testbed/old.txt\nA  testbed/staged.txt\n')).toEqual([
      ['testbed/a.txt', 'M'],
      ['testbed/new/', '??'],
      ['testbed/old.txt', 'D'],
      ['testbed/staged.txt', 'A'],
    ]);
  });

  it('reads nothing from an empty status', () => {
    expect(parseGitStatus('')).toEqual([]);
    expect(parseGitStatus('\n')).toEqual([]);
  });

  it('splits a path with a space as InterCode did (the halves pair up wrongly)', () => {
    expect(parseGitStatus('?? testbed/my file.txt\n M testbed/b.txt\n')).toEqual([
      ['testbed/my', '??'],
      ['M', 'file.txt'],
    ]);
    // An odd word count drops the last word.
    expect(parseGitStatus('?? a b')).toEqual([['a', '??']]);
  });
});

describe('sharedAdditions', () => {
  it('keeps the changes both sides made that add a file (A, ??, C), once each', () => {
    const agent: FileChange[] = [
      ['testbed/a.txt', '??'],
      ['testbed/a.txt', '??'],
      ['testbed/b.txt', 'M'],
      ['testbed/c.txt', 'A'],
      ['testbed/only-agent.txt', '??'],
    ];
    const gold: FileChange[] = [
      ['testbed/a.txt', '??'],
      ['testbed/b.txt', 'M'],
      ['testbed/c.txt', 'A'],
      ['testbed/only-gold.txt', '??'],
    ];
    expect(sharedAdditions(agent, gold)).toEqual([
      ['testbed/a.txt', '??'],
      ['testbed/c.txt', 'A'],
    ]);
  });

  it('needs the same status on both sides', () => {
    expect(sharedAdditions([['testbed/a.txt', 'A']], [['testbed/a.txt', '??']])).toEqual([]);
  });
});

describe('bashReward', () => {
  it('identical outcomes score exactly 0.01 + 0.33 + 0.33 + 0.33, which is 1', () => {
    const result = bashReward(outcome('hello world\n'), outcome('hello world\n'));
    expect(result.parts).toEqual({ file_diff: 0.33, file_changes: 0.33, answer_similarity: 0.33 });
    expect(result.reward).toBe(0.01 + 0.33 + 0.33 + 0.33);
    expect(result.reward).toBe(1);
    // Two words of weight 1/√2 each: scikit-learn's cosine is 0.9999999999999998, and
    // round(0.33 × that, 2) is still 0.33.
    expect(result.info).toEqual({ diff_miss: [], diff_extra: [], answer_similarity: 0.9999999999999998 });
  });

  it('one change on one side only: file_diff = round(0.33·(1 − erf 1), 2) = 0.05', () => {
    const result = bashReward(outcome('x\n', [['testbed/extra.txt', '??']]), outcome('x\n'));
    expect(result.parts.file_diff).toBe(0.05);
    expect(result.info.diff_extra).toEqual([['testbed/extra.txt', '??']]);
    expect(result.info.diff_miss).toEqual([]);
    expect(result.reward).toBe(0.72);
  });

  it('two changes on one side only (a miss and an extra): file_diff 0.0', () => {
    const result = bashReward(outcome('x\n', [['testbed/extra.txt', '??']]), outcome('x\n', [['testbed/wanted.txt', '??']]));
    expect(result.parts.file_diff).toBe(0);
    expect(result.info.diff_miss).toEqual([['testbed/wanted.txt', '??']]);
    expect(result.reward).toBe(0.67);
  });

  it('the same path with a different status is both missed and extra', () => {
    const result = bashReward(outcome('', [['testbed/a.txt', 'D']]), outcome('', [['testbed/a.txt', 'M']]));
    expect(result.info.diff_miss).toEqual([['testbed/a.txt', 'M']]);
    expect(result.info.diff_extra).toEqual([['testbed/a.txt', 'D']]);
    expect(result.parts.file_diff).toBe(0);
  });

  it('an md5 mismatch on the one shared added file: file_changes 0', () => {
    const change: FileChange = ['testbed/a.txt', '??'];
    const result = bashReward(outcome('', [change], { 'testbed/a.txt': MD5_B }), outcome('', [change], { 'testbed/a.txt': MD5_A }));
    expect(result.parts).toEqual({ file_diff: 0.33, file_changes: 0, answer_similarity: 0.33 });
    expect(result.info.diff_same).toEqual({ files: [change], correct: 0, total: 1 });
    expect(result.reward).toBe(0.67);
  });

  it('one of two shared files right: file_changes round(0.165, 2) = 0.17 and the sum 0.8400000000000001', () => {
    const changes: FileChange[] = [
      ['testbed/a.txt', '??'],
      ['testbed/b.txt', 'A'],
    ];
    const result = bashReward(
      outcome('', changes, { 'testbed/a.txt': 'same', 'testbed/b.txt': 'agent' }),
      outcome('', changes, { 'testbed/a.txt': 'same', 'testbed/b.txt': 'gold' }),
    );
    expect(result.parts.file_changes).toBe(0.17);
    expect(result.reward).toBe(0.8400000000000001);
    expect(result.reward).not.toBe(0.84);
  });

  it("InterCode quirk: paths without a '.' all hash to the same error text, so they always agree", () => {
    // FileProbe in 'intercode' hash mode gives every '.'-less path this text (md5deep
    // was not installed in InterCode's image): two different folders compare equal.
    const quirk = 'md5deep: command not found';
    const change: FileChange = ['testbed/reports/', '??'];
    const result = bashReward(outcome('', [change], { 'testbed/reports/': quirk }), outcome('', [change], { 'testbed/reports/': quirk }));
    expect(result.parts.file_changes).toBe(0.33);
    expect(result.info.diff_same).toEqual({ files: [change], correct: 1, total: 1 });
  });

  it('a modified file (M) is not hashed: only its status is compared', () => {
    const change: FileChange = ['testbed/a.txt', 'M'];
    const result = bashReward(outcome('', [change], { 'testbed/a.txt': 'x' }), outcome('', [change], { 'testbed/a.txt': 'y' }));
    expect(result.parts.file_changes).toBe(0.33);
    expect(result.info.diff_same).toBeUndefined();
  });

  it('empty observations on both sides: answer part 0.33 (no vocabulary, equal strings)', () => {
    const result = bashReward(outcome(''), outcome(''));
    expect(result.info.answer_similarity).toBe(1);
    expect(result.parts.answer_similarity).toBe(0.33);
  });

  it('observations without a two-letter word compare as strings', () => {
    expect(bashReward(outcome('2\n'), outcome('2\n')).parts.answer_similarity).toBe(0.33);
    expect(bashReward(outcome('2\n'), outcome('3\n')).parts.answer_similarity).toBe(0);
  });

  it('a null agent observation against a string scores answer 0; null against null scores 0.33', () => {
    expect(bashReward(outcome(null), outcome('hello world\n')).parts.answer_similarity).toBe(0);
    expect(bashReward(outcome(null), outcome('')).parts.answer_similarity).toBe(0);
    expect(bashReward(outcome(null), outcome(null)).parts.answer_similarity).toBe(0.33);
  });

  it('partial answer similarity is rounded after scaling: 0.33 × 0.336… → 0.11', () => {
    const similarity = answerSimilarity('foo bar', 'foo baz');
    expect(similarity).toBeCloseTo(0.3361, 4);
    const result = bashReward(outcome('foo bar'), outcome('foo baz'));
    expect(result.parts.answer_similarity).toBe(0.11);
    expect(result.info.answer_similarity).toBe(similarity);
    expect(result.reward).toBe(0.01 + 0.33 + 0.33 + 0.11);
  });
});

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const RECORDED = resolve(repoRoot, '../shared/intercode-data/trajectories/bash/ic_bash_multiturn_gpt-3.5_10_turns_fs_1.json');
const recordedPresent = existsSync(RECORDED);
if (!recordedPresent) console.warn(`skipping recorded bash rewards: ${RECORDED} does not exist`);

interface RecordedBashEpisode {
  turn_history: { rewards: number[] };
  info: {
    reward?: { file_diff: number; file_changes: number; answer_similarity: number };
    diff_miss?: [string, string][];
    diff_extra?: [string, string][];
    agent_obs?: string | null;
    eval_obs?: string | null;
    answer_similarity?: number;
  };
}

describe.skipIf(!recordedPresent)('bashReward against rewards InterCode recorded (reference data)', () => {
  it('the first 15 episodes of the GPT-3.5 fs-1 run: answer and file-diff parts match exactly', async () => {
    const file = JSON.parse(await readFile(RECORDED, 'utf8')) as Record<string, RecordedBashEpisode>;
    const keys = Object.keys(file).slice(0, 15);
    expect(keys).toHaveLength(15);
    let checked = 0;
    for (const key of keys) {
      const { info, turn_history } = file[key]!;
      if (!info.reward || info.agent_obs === undefined || info.eval_obs === undefined) continue;
      checked++;
      const similarity = answerSimilarity(info.agent_obs, info.eval_obs);
      expect(similarity, `episode ${key}: answer similarity`).toBe(info.answer_similarity);
      expect(pyRound(0.33 * similarity, 2), `episode ${key}: answer part`).toBe(info.reward.answer_similarity);
      // The recorded diff lists give the file-diff term; contents cannot be recovered,
      // so with no shared additions file_changes is 0.33 — as recorded in these episodes.
      const result = bashReward(
        outcome(info.agent_obs, info.diff_extra ?? []),
        outcome(info.eval_obs, info.diff_miss ?? []),
      );
      expect(result.parts.file_diff, `episode ${key}: file_diff`).toBe(info.reward.file_diff);
      if (info.reward.file_changes === 0.33) {
        expect(result.parts, `episode ${key}: parts`).toEqual(info.reward);
        expect(result.reward, `episode ${key}: reward`).toBe(turn_history.rewards.at(-1));
      }
    }
    expect(checked).toBe(15);
  });
});
