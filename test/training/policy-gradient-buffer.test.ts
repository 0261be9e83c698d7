/**
 * Policy gradient reads its round's episodes from an on-policy replay buffer: each played
 * episode in order under `<round>-<i>`, its transitions the states the policy acted in
 * (query, last output, last action, step), its reward the episode's; an episode whose sandbox
 * was lost is never put in it.
 */
import { describe, expect, it } from 'vitest';
import type { Task } from '../../src/datasets/index.js';
import type { StepInfo } from '../../src/env/types.js';
import type { Rollout } from '../../src/policy/index.js';
import { onPolicyBuffer } from '../../training/loops/policy-gradient.js';

const task = (id: string): Task => ({ index: Number(id), id, query: `query ${id}`, gold: 'SELECT 1', metadata: {} });
const info = (extra: Partial<StepInfo> = {}) => ({ ...extra }) as StepInfo;

const played: Rollout[] = [
  {
    task: task('0'),
    turns: [
      { action: 'SELECT 2', observation: '[(2,)]', reward: 0, info: info() },
      { action: 'submit', observation: '', reward: 1, info: info() },
    ],
    reward: 1,
    terminated: true,
    truncated: false,
  },
  {
    task: task('1'),
    turns: [{ action: 'SELECT 3', observation: '', reward: 0, info: info({ truncation: { reason: 'sandbox-lost' } } as Partial<StepInfo>) }],
    reward: 0,
    terminated: false,
    truncated: true,
    truncation: 'sandbox-lost',
  },
  {
    task: task('2'),
    turns: [{ action: 'submit', observation: '', reward: 0.5, info: info() }],
    reward: 0.5,
    terminated: true,
    truncated: false,
  },
];

describe('policy gradient through a replay buffer', () => {
  it('holds the round\'s episodes in play order, without the one whose sandbox was lost', () => {
    const episodes = onPolicyBuffer('sql', played, 'pg-3').episodes();
    expect(episodes.map((e) => [e.id, e.taskId, e.reward])).toEqual([
      ['pg-3-0', '0', 1],
      ['pg-3-1', '2', 0.5],
    ]);
    expect(episodes[0]!.transitions.map(({ query, observation, previousAction, step, action }) => ({ query, observation, previousAction, step, action }))).toEqual([
      { query: 'query 0', observation: 'query 0', previousAction: '', step: 0, action: 'SELECT 2' },
      { query: 'query 0', observation: '[(2,)]', previousAction: 'SELECT 2', step: 1, action: 'submit' },
    ]);
  });

  it('is empty (but usable) when every episode was lost', () => {
    const buffer = onPolicyBuffer('sql', [played[1]!], 'pg-0');
    expect(buffer.size).toBe(0);
    expect(buffer.episodes()).toEqual([]);
  });
});
