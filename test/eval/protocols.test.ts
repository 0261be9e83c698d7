import { describe, expect, it } from 'vitest';
import { createStrategy, type ChatMessage, type ChatModel } from '../../src/agents/index.js';
import { playEpisode } from '../../src/eval/index.js';
import { rollout } from '../../src/policy/index.js';
import { FakeEnv, task } from './fake-env.js';
import { bashPlugin } from '../../envs/bash/plugin.js';

/** A model that answers with `replies` in order and keeps every request it got. */
class ScriptedModel implements ChatModel {
  readonly model = 'scripted';
  readonly requests: ChatMessage[][] = [];
  constructor(private readonly replies: string[]) {}
  async complete(messages: readonly ChatMessage[]) {
    this.requests.push(messages.map((m) => ({ ...m })));
    const content = this.replies[Math.min(this.requests.length - 1, this.replies.length - 1)]!;
    return { content, usage: { promptTokens: 10, completionTokens: 2 }, attempts: 1 };
  }
}

const T = task(0, 'Print the word hello', 'echo hello');
const settings = { envName: 'bash', stepScoring: bashPlugin.agent.stepScoring, dataset: 'd.json', turns: 4 };

describe('evaluation protocols', () => {
  it('Try Again feeds output and reward back, counts a reply without code as an invalid turn, and stops at 1', async () => {
    const model = new ScriptedModel(['', '```bash\necho hell\n```', '```bash\necho hello\n```', '```bash\nnever asked\n```']);
    const log = await playEpisode(new FakeEnv([T]), createStrategy('try-again', { prompt: bashPlugin.agent.prompt, model }), T, settings);
    expect(log.turn_history.actions).toEqual(['', 'echo hell', 'echo hello']);
    expect(log.turn_history.valid_action).toEqual([false, true, true]);
    expect(log.turn_history.rewards).toEqual([0, 0, 1]);
    expect(log.turn_history.observations[0]).toMatch(/^Nothing was run: the reply was empty/);
    expect(log.summary).toEqual({ max_reward: 1, max_reward_idx: 2, turns_taken: 3, turns_max: 4 });
    const third = model.requests[2]!;
    expect(third[0]!.role).toBe('system');
    expect(third[1]).toEqual({ role: 'user', content: 'Task: Print the word hello' });
    expect(third.at(-1)!.content).toContain('Output:\nran echo hell\nReward: 0\n');
    expect(log.usage).toEqual({ requests: 3, retries: 0, prompt_tokens: 30, completion_tokens: 6, cost_usd: null });
  });

  it('single turn plays one action and is scored on it', async () => {
    const model = new ScriptedModel(['```bash\necho hello | tr h h\n```']);
    const log = await playEpisode(new FakeEnv([T]), createStrategy('single-turn', { prompt: bashPlugin.agent.prompt, model }), T, settings);
    expect(log.turn_history.rewards).toEqual([0.5]);
    expect(log.summary).toMatchObject({ max_reward: 0.5, turns_taken: 1, turns_max: 1 });
  });

  it('ReAct scores only the submit, and the runner submits at the turn limit (a turn not counted as taken)', async () => {
    const model = new ScriptedModel(['Thought: try\nAction: execute[echo hello]\nObservation: hello', 'Thought: done\nAction: submit']);
    const solved = await playEpisode(new FakeEnv([T]), createStrategy('react', { prompt: bashPlugin.agent.prompt, model }), T, settings);
    expect(solved.turn_history.actions).toEqual(['echo hello', 'submit']);
    expect(solved.turn_history.rewards).toEqual([0, 1]);
    expect(solved.summary).toMatchObject({ max_reward: 1, turns_taken: 2 });

    const looping = new ScriptedModel(['Thought: again\nAction: execute[echo hi]', 'I would rather chat.']);
    const cut = await playEpisode(new FakeEnv([T]), createStrategy('react', { prompt: bashPlugin.agent.prompt, model: looping }), T, { ...settings, turns: 3 });
    expect(cut.turn_history.actions).toEqual(['echo hi', 'I would rather chat.', 'I would rather chat.', 'submit']);
    expect(cut.turn_history.valid_action).toEqual([true, false, false, true]);
    expect(cut.summary).toMatchObject({ max_reward: 0, turns_taken: 3 });
    expect(looping.requests[1]!.at(-1)).toEqual({ role: 'user', content: 'Observation: ran echo hi' });
  });

  it('Plan & Solve runs every plan step (not stopping at 1), then refines only when unsolved', async () => {
    const model = new ScriptedModel(['Plan:\n1. Print it.\n2. Check it.', '```bash\necho hello\n```', '```bash\necho again\n```', '```bash\necho hello\n```']);
    const strategy = createStrategy('plan-solve', { prompt: bashPlugin.agent.prompt, model, refineTurns: 2 });
    const log = await playEpisode(new FakeEnv([T]), strategy, T, settings);
    expect(log.turn_history.actions).toEqual(['echo hello', 'echo again', 'echo hello']);
    expect(log.turn_history.rewards).toEqual([1, 0, 1]);
    expect(log.summary).toMatchObject({ max_reward: 1, turns_taken: 3, turns_max: 6 });
    expect(model.requests[1]!.at(-1)).toEqual({ role: 'user', content: 'Step: Print it.' });
    expect(model.requests[2]!.at(-1)).toEqual({ role: 'user', content: 'Observation: ran echo hello\nStep: Check it.' });
    expect(model.requests[3]!.at(-2)!.role).toBe('system');
  });

  it('keeps the opening messages and the most recent ones under a dialogue limit', async () => {
    const model = new ScriptedModel(['```bash\necho a\n```']);
    await playEpisode(new FakeEnv([T]), createStrategy('try-again', { prompt: bashPlugin.agent.prompt, model, dialogueLimit: 3 }), T, settings);
    const last = model.requests.at(-1)!;
    expect(last).toHaveLength(5);
    expect(last.slice(0, 2).map((m) => m.role)).toEqual(['system', 'user']);
    expect(last[1]!.content).toBe('Task: Print the word hello');
    expect(last.slice(2).map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
  });

  it('a strategy is a Policy that rollout drives to a submit', async () => {
    const model = new ScriptedModel(['Let me think', '```bash\necho hello\n```']);
    const played = await rollout(new FakeEnv([T]), createStrategy('try-again', { prompt: bashPlugin.agent.prompt, model }), { envName: 'bash', task: T, turnLimit: 2 });
    expect(played.turns.map((t) => t.action)).toEqual(['Let me think', 'echo hello', 'submit']);
    expect(played.reward).toBe(1);
  });

});
