import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createStrategy, OpenAiChatClient, toolCallAction, type StrategyAgent } from '../../src/agents/index.js';
import { playEpisode, runEval } from '../../src/eval/index.js';
import { RecordedModel, startMockServer } from '../../src/mock-llm/index.js';
import { buildRecord } from '../../src/rollouts/index.js';
import { VecEnv, VecEpisodeDriver } from '../../src/vec/index.js';
import { FakeEnv, task } from '../eval/fake-env.js';
import { scriptedServer } from './scripted-server.js';
import { ENV_PLUGINS } from '../../envs/index.js';
import { bashPlugin } from '../../envs/bash/plugin.js';
import { recordedEnvFence } from '../../envs/index.js';

const ENV_PROMPTS = Object.fromEntries(ENV_PLUGINS.map((p) => [p.name, p.agent.prompt]));

const TASKS = [task(0, 'List the files in /srv', 'ls /srv'), task(1, 'Print the date', 'date')];
let closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.map((c) => c()));
  closers = [];
});

async function play(replies: Parameters<typeof scriptedServer>[0], turns = 10) {
  const server = await scriptedServer(replies);
  closers.push(server.close);
  const model = new OpenAiChatClient({ baseUrl: server.baseUrl, model: 'm', backoffMs: 1 });
  const strategy = createStrategy('tools', { prompt: bashPlugin.agent.prompt, model });
  let agent: StrategyAgent | undefined;
  const log = await playEpisode(new FakeEnv(TASKS), strategy, TASKS[0]!, { envName: 'bash', stepScoring: bashPlugin.agent.stepScoring, dataset: 'd', turns, seed: 7 }, (a) => (agent = a));
  const record = buildRecord({ envName: 'bash', task: TASKS[0]!, log, agent: agent!.record(), strategy, model: 'm', sample: { index: 0, seed: 7, temperature: 0 }, sessionId: 's' });
  return { log, record, bodies: server.bodies };
}

describe('the tools strategy over HTTP', () => {
  it('offers execute and submit, runs several calls of one reply in order, answers each with a tool message, and retries a reply without a call', async () => {
    const { log, record, bodies } = await play([
      { content: 'Two tries.', calls: [['execute', { code: 'bad ls' }], ['execute', { code: 'ls' }]] },
      { content: 'I think I am done.' },
      { calls: [['run', { code: 'x' }]] },
      { calls: [['execute', { code: 'ls /srv' }]] },
    ]);
    // The request: tools offered, the seed sent; no tokens asked by default.
    expect(bodies[0].tools.map((t: any) => t.function.name)).toEqual(['execute', 'submit']);
    expect(bodies[0].tool_choice).toBe('auto');
    expect(bodies[0].seed).toBe(7);
    expect(bodies[0].logprobs).toBeUndefined();
    // Both calls of the first reply ran, in order, before the model was asked again.
    expect(log.turn_history.actions).toEqual(['bad ls', 'ls', 'I think I am done.', 'run({"code":"x"})', 'ls /srv']);
    expect(log.turn_history.valid_action).toEqual([false, true, false, false, true]);
    expect(bodies).toHaveLength(4);
    const second = bodies[1].messages;
    expect(second.slice(-3)).toEqual([
      { role: 'assistant', content: 'Two tries.', tool_calls: [expect.objectContaining({ id: 'c1_0' }), expect.objectContaining({ id: 'c1_1' })] },
      { role: 'tool', tool_call_id: 'c1_0', content: 'ran bad ls\nReward: 0' },
      { role: 'tool', tool_call_id: 'c1_1', content: 'ran ls\nReward: 0' },
    ]);
    // A reply without a call: a retry message as the user; an unknown function: the error in its tool message.
    expect(bodies[2].messages.at(-1)).toEqual({ role: 'user', content: expect.stringContaining('called no function') });
    expect(bodies[3].messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'c3_0', content: expect.stringContaining('there is no function "run"') });
    // Solved at the last call (Try Again's every-step scoring ends at 1).
    expect(log.summary).toMatchObject({ max_reward: 1, turns_taken: 5 });
    expect(record).toMatchObject({ terminated: true, truncated: false, truncation: null, executed: [true, true, false, false, true], turn_messages: [2, 2, 5, 7, 9] });
    expect(record.messages[record.turn_messages[0]!]!.role).toBe('assistant');
  });

  it('ends at the turn limit as truncated, and a submit call submits', async () => {
    const limited = await play([{ calls: [['execute', { code: 'echo' }]] }], 3);
    expect(limited.log.turn_history.actions).toEqual(['echo', 'echo', 'echo']);
    expect(limited.record).toMatchObject({ terminated: false, truncated: true, truncation: 'turn limit 3 reached without a submit' });
    const submitted = await play([{ calls: [['execute', { code: 'ls /srv/x' }], ['submit', {}]] }]);
    expect(submitted.log.turn_history.actions).toEqual(['ls /srv/x', 'submit']);
    expect(submitted.record).toMatchObject({ terminated: true, reward: 0.5 });
  });

  it('maps calls to actions: submit with an answer, code cleaned per env, bad arguments refused', () => {
    const sql = ENV_PROMPTS.sql!.syntax;
    expect(toolCallAction({ id: 'a', name: 'submit', arguments: '{"answer":" picoCTF{x} "}' }, sql)).toEqual({ action: 'submit picoCTF{x}' });
    expect(toolCallAction({ id: 'a', name: 'submit', arguments: '' }, sql)).toEqual({ action: 'submit' });
    expect(toolCallAction({ id: 'a', name: 'execute', arguments: '{"code":"SELECT 1;"}' }, sql)).toEqual({ action: 'SELECT 1' });
    expect(toolCallAction({ id: 'a', name: 'execute', arguments: '{code' }, sql)).toEqual({ problem: 'the arguments of execute are not JSON' });
    expect(toolCallAction({ id: 'a', name: 'execute', arguments: '{"cmd":"ls"}' }, sql)).toEqual({ problem: 'execute needs a "code" string' });
  });
});

describe('eval --strategy tools against the recorded model', () => {
  it('gets the recorded actions as tool calls and reproduces the recording\'s success, as Try Again does', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'intercode-tools-'));
    closers.push(() => rm(dir, { recursive: true, force: true }));
    const recorded = (query: string, actions: string[], observations: string[], rewards: number[]) => ({
      environment: 'ic_bash',
      query,
      turn_history: { actions, observations, rewards, valid_action: actions.map(() => true) },
      summary: { max_reward: Math.max(...rewards) },
    });
    await writeFile(
      join(dir, 'rec.json'),
      JSON.stringify({
        0: recorded(TASKS[0]!.query, ['ls', 'I cannot.', 'ls /srv'], ['x', 'No BASH code was found in your last response.', 'y'], [0, 0, 1]),
        1: recorded(TASKS[1]!.query, ['echo', 'cal'], ['', ''], [0, 0]),
      }),
    );
    const server = await startMockServer(await RecordedModel.load(join(dir, 'rec.json'), recordedEnvFence), 0);
    closers.push(server.close);
    const results: Record<string, number> = {};
    for (const name of ['tools', 'try-again']) {
      const model = new OpenAiChatClient({ baseUrl: server.baseUrl, model: 'recorded', backoffMs: 1 });
      const result = await runEval({
        envName: 'bash', stepScoring: bashPlugin.agent.stepScoring, dataset: 'd', turns: 3, strategy: createStrategy(name, { prompt: bashPlugin.agent.prompt, model }), model: 'recorded', tasks: TASKS,
        executor: new VecEpisodeDriver(new VecEnv([new FakeEnv(TASKS)], { autoreset: 'disabled' })), out: join(dir, name), settings: { strategy: name },
      });
      results[name] = result.summary.successRate;
    }
    expect(results).toEqual({ tools: 0.5, 'try-again': 0.5 });
    const log = JSON.parse((await import('node:fs')).readFileSync(join(dir, 'tools', 'ic_bash_tools_recorded_3_turns.json'), 'utf8'));
    expect(log['0'].turn_history.actions).toEqual(['ls', 'I cannot.', 'ls /srv']);
    expect(log['0'].turn_history.replies[0]).toBe('execute({"code":"ls"})');
    expect(log['1'].turn_history.actions).toEqual(['echo', 'cal', 'cal']);
  });
});
