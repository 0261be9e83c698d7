import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStrategy, OpenAiChatClient } from '../../src/agents/index.js';
import { RecordedModel, startMockServer, type MockServer } from '../../src/mock-llm/index.js';
import {
  ATIF_VERSION,
  formatRecord,
  groupAdvantages,
  readEpisodeTurns,
  sampleGroups,
  toIntercodeLayout,
  type RolloutRecord,
} from '../../src/rollouts/index.js';
import { readRecordedTrajectories } from '../../src/trajectory/index.js';
import { VecEnv, VecEpisodeDriver } from '../../src/vec/index.js';
import { FakeEnv, task } from '../eval/fake-env.js';
import { bashPlugin } from '../../envs/bash/plugin.js';
import { recordedEnvFence } from '../../envs/index.js';

const TASKS = [task(0, 'List the files in /srv', 'ls /srv'), task(1, 'Print the date', 'date'), task(2, 'Show the disk usage of /var', 'du -sh /var')];
const recorded = (query: string, actions: string[], observations: string[], rewards: number[]) => ({
  environment: 'ic_bash',
  query,
  turn_history: { actions, observations, rewards, valid_action: actions.map(() => true) },
  summary: { max_reward: Math.max(...rewards) },
});

let dir: string;
let server: MockServer;
const records: Record<string, RolloutRecord[]> = {};

/** K=3 samples of every task with the tools strategy against the recorded model over HTTP. */
async function sample(tokens: 'none' | 'ids', strategyName = 'tools'): Promise<RolloutRecord[]> {
  const model = new OpenAiChatClient({ baseUrl: server.baseUrl, model: 'recorded', tokens, temperature: 1, backoffMs: 1 });
  const out: RolloutRecord[] = [];
  await sampleGroups({
    envName: 'bash', stepScoring: bashPlugin.agent.stepScoring, dataset: 'd', strategy: createStrategy(strategyName, { prompt: bashPlugin.agent.prompt, model }), model: 'recorded', tasks: TASKS,
    executor: new VecEpisodeDriver(new VecEnv([new FakeEnv(TASKS), new FakeEnv(TASKS)], { autoreset: 'disabled' })),
    turns: 4, samplesPerTask: 3, seed: 100, temperature: 1, scaleAdvantages: false, stamp: 'run',
    onGroup: (group) => void out.push(...group),
  });
  return out;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'intercode-formats-'));
  await writeFile(
    join(dir, 'rec.json'),
    JSON.stringify({
      0: recorded(TASKS[0]!.query, ['ls', 'I cannot.', 'ls /srv'], ['x', 'No BASH code was found in your last response.', 'y'], [0, 0, 1]),
      1: recorded(TASKS[1]!.query, ['echo', 'cal'], ['', ''], [0, 0]),
      2: recorded(TASKS[2]!.query, ['du -sh /var | cat', 'submit'], ['4K', ''], [0.5, 0.5]),
    }),
  );
  server = await startMockServer(await RecordedModel.load(join(dir, 'rec.json'), recordedEnvFence), 0);
  records.ids = await sample('ids');
  records.none = await sample('none');
  records.tryAgain = await sample('ids', 'try-again');
});
afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

describe('groups', () => {
  it('mean-centres advantages, optionally std-scaled, and gives 0 to a group of equal rewards', () => {
    expect(groupAdvantages([1, 0, 0, 1], false)).toEqual({ mean: 0.5, std: 0.5, advantages: [0.5, -0.5, -0.5, 0.5] });
    const scaled = groupAdvantages([1, 0, 0, 1], true);
    scaled.advantages.forEach((a, i) => expect(a).toBeCloseTo([1, -1, -1, 1][i]!, 5));
    expect(groupAdvantages([0.3, 0.3, 0.3], true).advantages).toEqual([0, 0, 0]);
    expect(groupAdvantages([], true).advantages).toEqual([]);
  });

  it('records K samples per task with their seeds, temperature, the group rewards and advantages', () => {
    const group = records.ids!.filter((r) => r.task_id === '2').sort((a, b) => a.sample.index - b.sample.index);
    expect(group.map((r) => r.sample)).toEqual([0, 1, 2].map((k) => ({ index: k, seed: 100 + 2 * 3 + k, temperature: 1 })));
    expect(group.map((r) => r.group)).toEqual(group.map(() => ({ id: '2', size: 3, rewards: [0.5, 0.5, 0.5], mean: 0.5, std: 0, advantage: 0, scaled: false })));
    expect(records.ids!.map((r) => r.session_id).sort()).toEqual(TASKS.flatMap((t) => [0, 1, 2].map((k) => `run-${t.id}-${k}`)).sort());
  });
});

describe('hf-messages', () => {
  it('writes one JSON object per episode with the documented columns, floats as floats, tokens present and aligned', () => {
    const lines = records.ids!.map((r) => formatRecord(r, 'hf-messages', '0.1.0'));
    expect(lines[0]).toMatch(/"reward":(1|0|0\.5)(\.0)?[,}]/);
    expect(lines.join('\n')).not.toMatch(/"reward":[01][,}]/);
    const rows = lines.map((l) => JSON.parse(l));
    const columns = ['messages', 'tools', 'reward', 'reward_components', 'step_components', 'task_id', 'task_index', 'env', 'query', 'actions', 'observations', 'rewards', 'valid_action', 'executed',
      'terminated', 'truncated', 'not_scored', 'policy', 'strategy', 'model', 'session_id', 'sample_index', 'seed', 'temperature', 'group_id', 'group_size', 'group_rewards',
      'advantage', 'prompt_ids', 'completion_ids', 'logprobs', 'token_ids', 'loss_mask', 'token_logprobs', 'tokens_absent', 'policy_version'];
    for (const row of rows) {
      expect(Object.keys(row)).toEqual(columns);
      expect(row.tools.map((t: any) => t.function.name)).toEqual(['execute', 'submit']);
      for (const m of row.messages) expect(['system', 'user', 'assistant', 'tool']).toContain(m.role);
      expect(row.completion_ids.length).toBe(row.messages.filter((m: any) => m.role === 'assistant').length);
      row.completion_ids.forEach((ids: number[], i: number) => expect(row.logprobs[i]).toHaveLength(ids.length));
      expect(row.loss_mask).toHaveLength(row.token_ids.length);
      expect(row.loss_mask.reduce((a: number, b: number) => a + b, 0)).toBe(row.completion_ids.flat().length);
      expect(row.tokens_absent).toBeNull();
    }
    const row0 = rows.find((r) => r.task_id === '0')!;
    // The messages are what was exchanged: the episode ended at reward 1, so the last call's result was never sent.
    expect(row0.messages.filter((m: any) => m.role === 'tool').map((m: any) => m.content)).toEqual(['ran ls\nReward: 0']);
    expect(row0.messages.at(-1)).toMatchObject({ role: 'assistant', tool_calls: [{ function: { name: 'execute', arguments: '{"code":"ls /srv"}' } }] });
    expect(row0).toMatchObject({ actions: ['ls', 'I cannot.', 'ls /srv'], executed: [true, false, true], reward: 1, terminated: true });
  });

  it('marks tokens absent when the server gave none', () => {
    const row = JSON.parse(formatRecord(records.none![0]!, 'hf-messages', '0.1.0'));
    expect(row).toMatchObject({ prompt_ids: null, completion_ids: null, logprobs: null, token_ids: null, loss_mask: null, token_logprobs: null });
    expect(row.tokens_absent).toBe('the server gave no prompt token ids, completion token ids, logprobs (for at least one turn)');
  });
});

describe('named reward components', () => {
  it('every format carries the parts of the episode reward and of each scored turn, and the policy versions', () => {
    for (const record of [...records.ids!, ...records.tryAgain!]) {
      const best = record.rewards.indexOf(record.reward);
      expect(record.step_components).toHaveLength(record.actions.length);
      // Every scored turn has the env's parts (the fake env's one part is its reward); a reply without an action has none.
      record.step_components.forEach((parts, i) => expect(parts).toEqual(record.executed[i] ? { gold_match: record.rewards[i] } : null));
      expect(record.reward_components).toEqual(best >= 0 ? { gold_match: record.reward } : {});
      expect(record.policy_version).toEqual({ requested: null, start: null, end: null });
      const hf = JSON.parse(formatRecord(record, 'hf-messages', '0.1.0'));
      expect(hf.reward_components).toEqual(record.reward_components);
      expect(hf.step_components).toEqual(record.step_components);
      const atif = JSON.parse(formatRecord(record, 'atif', '0.1.0'));
      expect(atif.extra.reward_components).toEqual(record.reward_components);
      const turns = [...atif.steps.flatMap((s: any) => s.extra?.turns ?? []), ...atif.extra.runner_turns];
      expect(turns.map((t: any) => t.components)).toEqual(record.step_components);
      const jsonl = JSON.parse(formatRecord(record, 'jsonl', '0.1.0'));
      expect(jsonl.reward_components).toEqual(record.reward_components);
    }
  });
});

describe('ATIF v1.4', () => {
  it("carries an episode's not_scored (reason and message) in the root extra, null when it was scored", () => {
    const scored = records.ids![0]!;
    expect(JSON.parse(formatRecord(scored, 'atif', '0.1.0')).extra.not_scored).toBeNull();
    const cut: RolloutRecord = { ...structuredClone(scored), reward: 0, terminated: false, truncated: true, truncation: 'no /logs/verifier/reward.txt', not_scored: { reason: 'reward-missing', message: 'no /logs/verifier/reward.txt' } };
    const t = JSON.parse(formatRecord(cut, 'atif', '0.1.0'));
    expect(t.extra).toMatchObject({ reward: 0, truncated: true, not_scored: { reason: 'reward-missing', message: 'no /logs/verifier/reward.txt' } });
  });

  it('carries every required field: root, agent, each step, each tool call and observation result', () => {
    for (const record of [...records.ids!, ...records.tryAgain!]) {
      const t = JSON.parse(formatRecord(record, 'atif', '0.1.0'));
      expect(t.schema_version).toBe(ATIF_VERSION);
      expect(typeof t.session_id).toBe('string');
      expect(t.session_id).not.toBe('');
      expect(typeof t.agent.name).toBe('string');
      expect(typeof t.agent.version).toBe('string');
      expect(t.agent.model_name).toBe('recorded');
      expect(Array.isArray(t.steps) && t.steps.length > 0).toBe(true);
      t.steps.forEach((step: any, i: number) => {
        expect(step.step_id).toBe(i + 1);
        expect(['system', 'user', 'agent']).toContain(step.source);
        expect(typeof step.message).toBe('string');
        for (const call of step.tool_calls ?? []) {
          expect(typeof call.tool_call_id).toBe('string');
          expect(typeof call.function_name).toBe('string');
          expect(call.arguments).toBeTypeOf('object');
        }
        for (const result of step.observation?.results ?? []) {
          expect(typeof result.source_call_id).toBe('string');
          expect(typeof result.content).toBe('string');
        }
        if (step.source === 'agent') {
          expect(step.metrics.completion_token_ids).toHaveLength(step.metrics.logprobs.length);
          expect(step.metrics.prompt_token_ids.length).toBeGreaterThan(0);
          expect(step.extra.turns.length).toBeGreaterThan(0);
        }
      });
      expect(t.extra).toMatchObject({ env: 'bash', task_id: record.task_id, reward: record.reward, group: record.group });
    }
    const toolSteps = JSON.parse(formatRecord(records.ids!.find((r) => r.task_id === '0')!, 'atif', '0.1.0')).steps;
    const withCall = toolSteps.find((s: any) => s.tool_calls);
    expect(withCall.observation.results[0].source_call_id).toBe(withCall.tool_calls[0].tool_call_id);
    expect(toolSteps.filter((s: any) => s.source === 'user').length).toBe(2); // the task and the retry message
  });
});

describe('back to InterCode\'s log layout', () => {
  it('gives the same episodes from hf-messages, ATIF and records, without the turns that never ran', async () => {
    const layouts = [];
    for (const format of ['jsonl', 'hf-messages', 'atif'] as const) {
      const file = join(dir, `out.${format}.jsonl`);
      await writeFile(file, records.ids!.map((r) => `${formatRecord(r, format, '0.1.0')}\n`).join(''));
      layouts.push(toIntercodeLayout(readEpisodeTurns(file)));
    }
    expect(layouts[1]).toEqual(layouts[0]);
    expect(layouts[2]).toEqual(layouts[0]);
    expect(Object.keys(layouts[0]!)).toEqual(['0', '1', '2']);
    expect((layouts[0] as any)['0']).toEqual({
      environment: 'ic_bash',
      query: TASKS[0]!.query,
      turn_history: { actions: ['ls', 'ls /srv'], observations: ['ran ls', 'ran ls /srv'], rewards: [0, 1], valid_action: [true, true] },
      summary: { max_reward: 1, turns_taken: 3 },
    });
    // It reads back as a recorded InterCode file.
    await writeFile(join(dir, 'ic.json'), JSON.stringify(layouts[2]));
    const episodes = await readRecordedTrajectories(join(dir, 'ic.json'));
    expect(episodes.map((e) => e.maxReward)).toEqual([1, 0, 0.5]);
  });

  it("keeps an episode's not_scored beside its max_reward 0, in every input format; a scored one has none", async () => {
    const scored = records.ids![0]!;
    const cut: RolloutRecord = { ...structuredClone(scored), reward: 0, terminated: false, truncated: true, truncation: 'no /logs/verifier/reward.txt', not_scored: { reason: 'reward-missing', message: 'no /logs/verifier/reward.txt' } };
    for (const format of ['jsonl', 'hf-messages', 'atif'] as const) {
      const file = join(dir, `cut.${format}.jsonl`);
      await writeFile(file, `${formatRecord(cut, format, '0.1.0')}\n`);
      const entry = (toIntercodeLayout(readEpisodeTurns(file)) as any)[String(cut.task_index)];
      expect(entry.summary.max_reward, format).toBe(0);
      expect(entry.not_scored, format).toEqual({ reason: 'reward-missing', message: 'no /logs/verifier/reward.txt' });
      await writeFile(join(dir, 'cut.ic.json'), JSON.stringify({ [String(cut.task_index)]: entry }));
      expect((await readRecordedTrajectories(join(dir, 'cut.ic.json'))).map((e) => e.maxReward)).toEqual([0]);
    }
    await writeFile(join(dir, 'scored.jsonl'), `${formatRecord(scored, 'jsonl', '0.1.0')}\n`);
    expect('not_scored' in (toIntercodeLayout(readEpisodeTurns(join(dir, 'scored.jsonl'))) as any)[String(scored.task_index)]).toBe(false);
  });

  it('names the file, line and field of a bad line', async () => {
    await writeFile(join(dir, 'bad.jsonl'), `${formatRecord(records.ids![0]!, 'hf-messages', 'v')}\n{"env":"bash","query":"q","actions":["a"],"observations":[],"rewards":[0]}\n`);
    expect(() => readEpisodeTurns(join(dir, 'bad.jsonl'))).toThrow(/bad\.jsonl.*line 2.*observations.*has 0 entries for 1 actions/);
  });
});
