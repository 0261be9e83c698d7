import { afterEach, describe, expect, it } from 'vitest';
import { OpenAiChatClient, type ModelTurn } from '../../src/agents/index.js';
import { RecordedModel, startMockServer } from '../../src/mock-llm/index.js';
import { tokenRecord } from '../../src/rollouts/index.js';
import { scriptedServer } from './scripted-server.js';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { recordedEnvFence } from '../../envs/index.js';

let closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.map((c) => c()));
  closers = [];
});

async function client(replies: Parameters<typeof scriptedServer>[0], tokens: 'none' | 'logprobs' | 'ids') {
  const server = await scriptedServer(replies);
  closers.push(server.close);
  return { model: new OpenAiChatClient({ baseUrl: server.baseUrl, model: 'm', tokens, backoffMs: 1 }), bodies: server.bodies };
}

describe('token data from the server', () => {
  it('asks for logprobs and (ids) vLLM token ids, and reads them as given', async () => {
    const vllm = {
      calls: [['execute', { code: 'ls' }]] as [string, Record<string, unknown>][],
      top: { prompt_token_ids: [5, 6, 7] },
      choice: { token_ids: [8, 9], logprobs: { content: [{ token: 'a', logprob: -0.5 }, { token: 'b', logprob: -0.25 }] } },
    };
    const ids = await client([vllm], 'ids');
    const reply = await ids.model.complete([{ role: 'user', content: 'x' }]);
    expect(ids.bodies[0]).toMatchObject({ logprobs: true, return_token_ids: true });
    expect(reply.tokens).toEqual({ promptIds: [5, 6, 7], completionIds: [8, 9], logprobs: [-0.5, -0.25] });
    expect(reply.toolCalls).toEqual([{ id: 'c1_0', name: 'execute', arguments: '{"code":"ls"}' }]);
    expect(reply.finishReason).toBe('tool_calls');

    const openai = await client([{ content: 'hi', choice: { logprobs: { content: [{ token: 'hi', logprob: -0.1 }] } } }], 'logprobs');
    const plain = await openai.model.complete([{ role: 'user', content: 'x' }]);
    expect(openai.bodies[0].logprobs).toBe(true);
    expect(openai.bodies[0].return_token_ids).toBeUndefined();
    expect(plain.tokens).toEqual({ promptIds: null, completionIds: null, logprobs: [-0.1] });

    // vLLM --return-tokens-as-token-ids: the ids are in the logprob tokens.
    const asIds = await client([{ content: 'hi', choice: { logprobs: { content: [{ token: 'token_id:42', logprob: -1 }, { token: 'token_id:7', logprob: -2 }] } } }], 'logprobs');
    expect((await asIds.model.complete([])).tokens).toEqual({ promptIds: null, completionIds: [42, 7], logprobs: [-1, -2] });

    const none = await client([{ content: 'hi' }], 'none');
    expect((await none.model.complete([])).tokens).toEqual({ promptIds: null, completionIds: null, logprobs: null });
    expect(none.bodies[0].logprobs).toBeUndefined();
  });

  it('the recorded model gives synthetic ids whose later prompts extend the earlier turns, and one logprob per completion token', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'intercode-tokens-'));
    closers.push(() => rm(dir, { recursive: true, force: true }));
    await writeFile(
      join(dir, 'rec.json'),
      JSON.stringify({ 0: { environment: 'ic_bash', query: 'Count the files', turn_history: { actions: ['ls', 'ls | wc -l'], observations: ['a b', '2'], rewards: [0, 1], valid_action: [true, true] }, summary: { max_reward: 1 } } }),
    );
    const server = await startMockServer(await RecordedModel.load(join(dir, 'rec.json'), recordedEnvFence), 0);
    closers.push(server.close);
    const model = new OpenAiChatClient({ baseUrl: server.baseUrl, model: 'recorded', tokens: 'ids' });
    const tools = [{ name: 'execute', description: 'run', parameters: { type: 'object' } }];
    const first = await model.complete([{ role: 'user', content: 'Task: Count the files' }], { tools });
    expect(first.toolCalls).toEqual([{ id: 'call_0_0', name: 'execute', arguments: '{"code":"ls"}' }]);
    const second = await model.complete(
      [{ role: 'user', content: 'Task: Count the files' }, { role: 'assistant', content: '', toolCalls: first.toolCalls }, { role: 'tool', toolCallId: 'call_0_0', content: 'a b' }],
      { tools },
    );
    expect(second.toolCalls![0]!.arguments).toBe('{"code":"ls | wc -l"}');
    const turns: ModelTurn[] = [first, second].map((r, i) => ({ message: i * 2 + 1, promptIds: null, completionIds: null, logprobs: null, ...r.tokens, finishReason: r.finishReason ?? null, policyVersion: null, ...r.usage }));
    for (const t of turns) expect(t.logprobs).toHaveLength(t.completionIds!.length);
    expect(second.tokens!.promptIds!.slice(0, first.tokens!.promptIds!.length + first.tokens!.completionIds!.length)).toEqual([...first.tokens!.promptIds!, ...first.tokens!.completionIds!]);
    expect(first.usage.completionTokens).toBe(first.tokens!.completionIds!.length);
    // The same request gives the same tokens (deterministic).
    const again = await model.complete([{ role: 'user', content: 'Task: Count the files' }], { tools });
    expect(again.tokens).toEqual(first.tokens);
    const record = tokenRecord(turns);
    expect(record).toMatchObject({ has_prompt_ids: true, has_completion_ids: true, has_logprobs: true, absent: null });
    expect(record.episode!.token_ids).toEqual([...second.tokens!.promptIds!, ...second.tokens!.completionIds!]);
  });
});

const turn = (prompt: number[] | null, completion: number[] | null, logprobs: number[] | null, message = 1): ModelTurn => ({
  message, promptIds: prompt, completionIds: completion, logprobs, finishReason: 'stop', policyVersion: null, promptTokens: 0, completionTokens: 0,
});

describe('tokenRecord', () => {
  it('builds one sequence with a loss mask of 1 exactly on the completions, logprobs on them and 0.0 elsewhere', () => {
    const record = tokenRecord([turn([1, 2], [3, 4], [-0.1, -0.2]), turn([1, 2, 3, 4, 5], [6], [-0.3])]);
    expect(record.episode).toEqual({ token_ids: [1, 2, 3, 4, 5, 6], loss_mask: [0, 0, 1, 1, 0, 1], logprobs: [0, 0, -0.1, -0.2, 0, -0.3] });
    expect(record.absent).toBeNull();
  });

  it('says why: no ids, a prompt that re-renders earlier turns, logprobs that do not line up, no turn', () => {
    const logprobsOnly = tokenRecord([turn(null, null, [-1])]);
    expect(logprobsOnly).toMatchObject({ has_prompt_ids: false, has_completion_ids: false, has_logprobs: true, episode: null });
    expect(logprobsOnly.absent).toBe('the server gave no prompt token ids, completion token ids (for at least one turn)');
    const rerendered = tokenRecord([turn([1, 2], [3], [-1]), turn([1, 9, 3], [4], [-1])]);
    expect(rerendered.episode).toBeNull();
    expect(rerendered.absent).toContain("turn 1's prompt does not begin with the tokens of the turns before it");
    const misaligned = tokenRecord([turn([1], [2, 3], [-1])]);
    expect(misaligned.episode).toBeNull();
    expect(misaligned.absent).toBe('turn 0 has 2 completion ids but 1 logprobs');
    expect(tokenRecord([]).absent).toBe('no model turn');
    expect(tokenRecord([turn(null, null, null)]).absent).toBe('the server gave no prompt token ids, completion token ids, logprobs (for at least one turn)');
  });
});
