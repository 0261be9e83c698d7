import { mkdtemp, readFile, rm, writeFile, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createStrategy, OpenAiChatClient } from '../../src/agents/index.js';
import { runEval, type EvalOptions } from '../../src/eval/index.js';
import { RecordedModel, startMockServer, type MockServer } from '../../src/mock-llm/index.js';
import { VecEnv, VecEpisodeDriver } from '../../src/vec/index.js';
import { FakeEnv, task } from './fake-env.js';
import { bashPlugin } from '../../envs/bash/plugin.js';
import { recordedEnvFence } from '../../envs/index.js';

/** Tasks and a recorded Try Again run over them, in InterCode's log layout. */
const TASKS = [
  task(0, 'List the files in /srv', 'ls /srv', { hardness: 'easy' }),
  task(1, 'Count the lines of a.txt', 'wc -l a.txt', { hardness: 'hard' }),
  task(2, 'Show the disk usage of /var', 'du -sh /var', { hardness: 'easy' }),
  task(3, 'Print the date', 'date', { hardness: 'hard' }),
];
const recorded = (query: string, actions: string[], observations: string[], rewards: number[]) => ({
  environment: 'ic_bash',
  query,
  turn_history: { actions, observations, rewards, valid_action: actions.map(() => true) },
  summary: { max_reward: Math.max(...rewards), turns_taken: actions.length },
});
const RECORDING = {
  0: recorded(TASKS[0]!.query, ['ls', 'ls /srv'], ['x', 'y'], [0, 1]),
  1: recorded(TASKS[1]!.query, ['bad wc', 'I cannot do that.', 'wc -l a.txt | cat'], ['err', 'No BASH code was found in your last response.', '3'], [0, 0, 0.5]),
  2: recorded(TASKS[2]!.query, ['du -sh /var'], ['4K'], [1]),
  3: recorded(TASKS[3]!.query, ['echo', 'cal', 'date'], ['', '', 'today'], [0, 0, 1]),
};

let dir: string;
let server: MockServer;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'intercode-eval-'));
  await writeFile(join(dir, 'recorded.json'), JSON.stringify(RECORDING));
  server = await startMockServer(await RecordedModel.load(join(dir, 'recorded.json'), recordedEnvFence), 0);
});
afterEach(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

function options(envs: FakeEnv[], out: string, overrides: Partial<EvalOptions> = {}): EvalOptions {
  const model = new OpenAiChatClient({ baseUrl: server.baseUrl, model: 'recorded', backoffMs: 1 });
  return {
    envName: 'bash',
    stepScoring: bashPlugin.agent.stepScoring,
    dataset: 'tasks.json',
    turns: 10,
    strategy: createStrategy('try-again', { prompt: bashPlugin.agent.prompt, model, prices: { input: 1, output: 2 } }),
    model: 'recorded',
    tasks: TASKS,
    executor: new VecEpisodeDriver(new VecEnv(envs, { autoreset: 'disabled' })),
    out,
    settings: { strategy: 'try-again', turns: 10 },
    ...overrides,
  };
}

describe('intercode eval against the recorded model over HTTP', () => {
  it('replays each recording in order, stops at reward 1, and summarises as the paper does', async () => {
    const out = join(dir, 'run');
    const { summary, logPath } = await runEval(options([new FakeEnv(TASKS), new FakeEnv(TASKS)], out));
    expect(summary).toMatchObject({ episodes: 4, successRate: 0.75, avgMaxReward: (1 + 0.5 + 1 + 1) / 4, avgTurns: (2 + 10 + 1 + 3) / 4, truncated: 0 });
    expect(summary.byHardness).toEqual({
      easy: { episodes: 2, successRate: 1, avgMaxReward: 1 },
      hard: { episodes: 2, successRate: 0.5, avgMaxReward: 0.75 },
    });
    const log = JSON.parse(await readFile(logPath, 'utf8'));
    expect(Object.keys(log)).toEqual(['0', '1', '2', '3']);
    expect(log['0'].turn_history).toMatchObject({ actions: ['ls', 'ls /srv'], rewards: [0, 1], valid_action: [true, true] });
    expect(log['0'].summary).toEqual({ max_reward: 1, max_reward_idx: 1, turns_taken: 2, turns_max: 10 });
    // Task 1 never reaches 1: the recording (3 replies) runs out and its last reply is repeated up to the turn limit.
    const t1 = log['1'].turn_history;
    expect(t1.actions.slice(0, 3)).toEqual(['bad wc', 'I cannot do that.', 'wc -l a.txt | cat']);
    expect(t1.actions).toHaveLength(10);
    expect(t1.valid_action.slice(0, 2)).toEqual([false, true]);
    expect(log['1'].hardness).toBe('hard');
    expect(summary.invalidActionRate).toBeCloseTo(1 / 16);
    expect(summary.usage.requests).toBe(16);
    expect(summary.usage.cost_usd).toBeGreaterThan(0);
    expect(server.stats).toMatchObject({ requests: 16, beyondRecording: 7, unmatched: 0 });
  });

  it('resumes an interrupted run without playing a finished task again, to the same summary', async () => {
    const whole = await runEval(options([new FakeEnv(TASKS)], join(dir, 'whole')));
    const out = join(dir, 'resumed');
    const stop = new AbortController();
    const first = new FakeEnv(TASKS);
    const partial = await runEval({ ...options([first], out), signal: stop.signal, onProgress: ({ done }) => done >= 2 && stop.abort() });
    expect(partial).toMatchObject({ played: 2, remaining: 2 });
    // A kill while a line was being written leaves a torn last line: it is dropped.
    await appendFile(join(out, 'episodes.jsonl'), '{"environment":"ic_bash","task_id":3,"que');
    const second = new FakeEnv(TASKS);
    const resumed = await runEval(options([second], out));
    expect(resumed).toMatchObject({ resumed: 2, played: 2, remaining: 0 });
    expect([...first.resets, ...second.resets].sort()).toEqual([0, 1, 2, 3]);
    expect(resumed.summary).toEqual(whole.summary);
    const lines = (await readFile(join(out, 'episodes.jsonl'), 'utf8')).trim().split('\n');
    expect(lines.map((l) => JSON.parse(l).task_id).sort()).toEqual([0, 1, 2, 3]);
  });

  it('counts an episode whose sandbox was lost as truncated, keeps its turns before the loss, and the env plays on', async () => {
    /** Loses its sandbox when `cal` runs. */
    class LosingEnv extends FakeEnv {
      override async step(action: string) {
        if (action !== 'cal') return super.step(action);
        return { observation: 'lost', reward: 0, terminated: false, truncated: true, info: { actionExecuted: false, exitCode: null, durationMs: 0, events: [], truncation: { reason: 'sandbox-lost' as const, message: 'container killed' } } };
      }
    }
    const env = new LosingEnv(TASKS);
    const { summary, logPath } = await runEval(options([env], join(dir, 'lost'), { tasks: [TASKS[3]!, TASKS[0]!] }));
    expect(env.resets).toEqual([3, 0]);
    expect(summary).toMatchObject({ episodes: 2, truncated: 1, successRate: 0.5 });
    const log = JSON.parse(await readFile(logPath, 'utf8'));
    expect(log['3'].truncated).toBe('container killed');
    expect(log['3'].turn_history).toMatchObject({ actions: ['echo', 'cal'], rewards: [0, 0], valid_action: [true, false] });
    expect(log['0'].summary.max_reward).toBe(1);
  });

  it('refuses to resume a run directory made with other settings', async () => {
    const out = join(dir, 'run');
    await runEval(options([new FakeEnv(TASKS)], out, { tasks: TASKS.slice(0, 1) }));
    await expect(runEval(options([new FakeEnv(TASKS)], out, { settings: { strategy: 'try-again', turns: 5 } }))).rejects.toThrow(
      /--out .* holds a run with other settings \(turns: 10 there, 5 now\)/,
    );
  });
});
