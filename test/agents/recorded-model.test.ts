import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractAction, parsePlan, parseReactAction } from '../../src/agents/index.js';
import { RecordedModel } from '../../src/mock-llm/index.js';
import { ENV_PLUGINS } from '../../envs/index.js';
import { recordedEnvFence } from '../../envs/index.js';

const ENV_PROMPTS = Object.fromEntries(ENV_PLUGINS.map((p) => [p.name, p.agent.prompt]));

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'intercode-recorded-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function load(name: string, content: unknown): Promise<RecordedModel> {
  const file = join(dir, name);
  await writeFile(file, JSON.stringify(content));
  return RecordedModel.load(file, recordedEnvFence);
}
const history = (actions: string[], observations: string[], extra: Record<string, unknown> = {}) => ({
  actions,
  observations,
  rewards: actions.map(() => 0),
  valid_action: actions.map(() => true),
  ...extra,
});
const user = (content: string) => ({ role: 'user' as const, content });
const assistant = (content: string) => ({ role: 'assistant' as const, content });

describe('RecordedModel', () => {
  it('answers code replies that extract back to the recorded actions; a recorded no-code reply stays prose', async () => {
    const model = await load('sql.json', {
      7: { environment: 'ic_sql', query: 'How many singers are there?', turn_history: history(['SHOW TABLES', 'Can you give me the schema?', "SELECT count(*) FROM singer WHERE name = 'a  b'"], ['[]', 'No SQL code was found in your last response.', '[(2,)]']), summary: { max_reward: 1 } },
      9: { environment: 'ic_sql', query: 'How many singers are there in France?', turn_history: history(['SELECT 1'], ['[(1,)]']), summary: { max_reward: 0 } },
    });
    const ask = (...rest: { role: 'user' | 'assistant'; content: string }[]) => model.answer([{ role: 'system', content: 'rules' }, ...rest]);
    const sql = ENV_PROMPTS.sql!.syntax;
    const first = ask(user('Task: How many singers are there?'));
    expect(first).toMatchObject({ turn: 0, beyondRecording: false });
    expect(extractAction((first as { reply: string }).reply, sql)).toEqual({ action: 'SHOW TABLES' });
    const second = ask(user('Task: How many singers are there?'), assistant('x'), user('Output: []'));
    expect(extractAction((second as { reply: string }).reply, sql)).toMatchObject({ action: null });
    const third = ask(user('Task: How many singers are there?'), assistant('x'), user('o'), assistant('y'), user('o'));
    expect(extractAction((third as { reply: string }).reply, sql)).toEqual({ action: "SELECT count(*) FROM singer WHERE name = 'a  b'" });
    // The longer query wins when one contains the other.
    expect(ask(user('Task: How many singers are there in France?'))).toMatchObject({ reply: '```sql\nSELECT 1\n```' });
    expect(ask(user('Task: something else'))).toEqual({ error: 'no recorded episode has a query that occurs in the messages' });
    expect(model).toMatchObject({ style: 'code', episodes: 2 });
  });

  it('answers ReAct files with Thought/Action replies and plan-solve files with the plan first', async () => {
    const react = await load('react.json', {
      0: { environment: 'ic_bash', query: 'Q1', turn_history: history(['execute[ls -l]', 'submit'], ['a', ''], { thoughts: ['look', 'done'] }), summary: { max_reward: 1 } },
    });
    const r0 = react.answer([user('Question: Q1')]) as { reply: string };
    expect(parseReactAction(r0.reply)).toEqual({ execute: 'ls -l' });
    const r1 = react.answer([user('Question: Q1'), assistant(r0.reply), user('Observation: a')]) as { reply: string };
    expect(parseReactAction(r1.reply)).toEqual({ submit: 'submit' });

    const plan = await load('plan.json', {
      meta: { env: 'bash' },
      logs: { 0: { environment: 'ic_bash', query: 'Q2', turn_history: history(['ls'], ['a'], { steps: ['List files\nin the folder', 'Stop'] }), summary: { max_reward: 0 } } },
    });
    const p0 = plan.answer([user('Question: Q2')]) as { reply: string };
    expect(parsePlan(p0.reply)).toEqual(['List files\nin the folder', 'Stop']);
    const p1 = plan.answer([user('Question: Q2'), assistant(p0.reply), user('Step: List files')]) as { reply: string };
    expect(extractAction(p1.reply, ENV_PROMPTS.bash!.syntax)).toEqual({ action: 'ls' });
    expect(plan.style).toBe('plan');
  });

  it('gives each recorded action as a function call: execute (ReAct brackets unwrapped), submit with its answer, none where InterCode found no code', async () => {
    const code = await load('calls.json', {
      0: { environment: 'ic_ctf', query: 'Q3', turn_history: history(['cat flag.txt', 'I do not know', 'submit picoCTF{x}'], ['a', 'No BASH code was found in your last response.', '']), summary: { max_reward: 1 } },
    });
    const at = (turn: number) => code.answer([user('Task: Q3'), ...Array.from({ length: turn }, () => assistant(''))]) as { call: unknown; reply: string };
    expect(at(0).call).toEqual({ name: 'execute', arguments: { code: 'cat flag.txt' } });
    expect(at(1)).toMatchObject({ call: null, reply: 'I do not know' });
    expect(at(2).call).toEqual({ name: 'submit', arguments: { answer: 'picoCTF{x}' } });
    const react = await load('react-calls.json', {
      0: { environment: 'ic_bash', query: 'Q4', turn_history: history(['execute[ls -l]', 'submit'], ['a', ''], { thoughts: ['look', 'done'] }), summary: { max_reward: 1 } },
    });
    expect((react.answer([user('Question: Q4')]) as { call: unknown }).call).toEqual({ name: 'execute', arguments: { code: 'ls -l' } });
    expect((react.answer([user('Question: Q4'), assistant('')]) as { call: unknown }).call).toEqual({ name: 'submit', arguments: {} });
  });
});
