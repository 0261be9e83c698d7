import { describe, expect, it } from 'vitest';
import { createStrategy, type ChatMessage, type ChatModel } from '../../src/agents/index.js';
import { ENV_PLUGINS } from '../../envs/index.js';
import { pythonPlugin } from '../../envs/python/plugin.js';
import type { Score } from '../../src/env/types.js';
import { playEpisode } from '../../src/eval/index.js';
import { FakeEnv, task } from '../eval/fake-env.js';

class ScriptedModel implements ChatModel {
  readonly model = 'scripted';
  private asked = 0;
  readonly systems: string[] = [];
  constructor(private readonly replies: string[]) {}
  async complete(messages: readonly ChatMessage[]) {
    if (this.asked === 0) this.systems.push(...messages.filter((m) => m.role === 'system').map((m) => m.content));
    const content = this.replies[Math.min(this.asked++, this.replies.length - 1)]!;
    return { content, usage: { promptTokens: 1, completionTokens: 1 }, attempts: 1 };
  }
}

/** Scores 1 only when the function submitted is the one the task wants, and keeps every submission it was asked to score. */
class FunctionEnv extends FakeEnv {
  readonly submissions: (string | undefined)[] = [];
  override async peekScore(submission?: string): Promise<Score> {
    this.submissions.push(submission);
    return { reward: submission === 'second_largest' ? 1 : 0, parts: {}, details: {} };
  }
}

describe('what every-step scoring submits (InterCode eval_n_turn.py)', () => {
  it('submits as it is for bash, sql and ctf', () => {
    for (const plugin of ENV_PLUGINS.filter((p) => ['bash', 'sql', 'ctf'].includes(p.name))) expect(plugin.agent.stepScoring('def f(x): pass')).toEqual({ kind: 'submit' });
  });

  it('python: the function the action defines on its first line, else nothing is scored', () => {
    const stepScoring = pythonPlugin.agent.stepScoring;
    expect(stepScoring('def second_largest(xs):\n    return sorted(xs)[-2]')).toEqual({ kind: 'submit', submission: 'second_largest' });
    expect(stepScoring('import math\ndef f(x):\n    return x')).toEqual({ kind: 'unscored' });
    expect(stepScoring('print(1)')).toEqual({ kind: 'unscored' });
    expect(stepScoring('  def f(x): pass')).toEqual({ kind: 'unscored' });
  });

  it('a Python Try Again episode scores each def under its own name and gives other actions 0', async () => {
    const T = task(0, 'Write a function returning the second largest number', 'def second_largest(xs): ...');
    const env = new FunctionEnv([T]);
    const model = new ScriptedModel([
      '```python\ndef helper(xs):\n    return xs\n```',
      '```python\nprint(helper([1, 2]))\n```',
      '```python\ndef second_largest(xs):\n    return sorted(set(xs))[-2]\n```',
    ]);
    const log = await playEpisode(env, createStrategy('try-again', { model, prompt: pythonPlugin.agent.prompt }), T, { envName: 'python', stepScoring: pythonPlugin.agent.stepScoring, dataset: 'd.json', turns: 5 });
    expect(env.submissions).toEqual(['helper', 'second_largest']);
    expect(log.turn_history.rewards).toEqual([0, 0, 1]);
    expect(log.summary).toMatchObject({ max_reward: 1, turns_taken: 3 });
    expect(model.systems[0]).toContain('starts with its `def` line');
  });
});
