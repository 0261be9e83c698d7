/**
 * The evaluation over episodes whose verifier gives no reward (the Harbor task fixtures under
 * test/fixtures/harbor-tasks/failing, in Docker), played by a scripted on-submit strategy: each
 * such episode's log says `not_scored` with the truncation's reason, the summary leaves it
 * out of `avgMaxReward` and counts it by reason — also when the runner's own submit at the
 * turn limit is the step that got no reward (it used to leave no trace of the truncation).
 */
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emptyUsage, type Strategy, type StrategyAgent } from '../../src/agents/index.js';
import { playEpisode, summarize, type EvalEpisodeLog } from '../../src/eval/index.js';
import { createTaskEnvs, type TaskDirEnv } from '../../envs/task/index.js';
import { taskPlugin } from '../../envs/task/plugin.js';
import { packagePath } from '../../src/package-path.js';
import { makeTempDir } from '../datasets/tmp-files.js';
import { dockerTestFile, skipWithoutEngine } from '../setup/docker.js';

const { engine } = await dockerTestFile();
const FIXTURES = packagePath('test', 'fixtures', 'harbor-tasks');

/** An on-submit (ReAct-like) strategy that plays the task's gold, then submits — or stops and leaves the submit to the runner. */
function goldStrategy(submits: boolean): Strategy {
  return {
    name: 'scripted-gold',
    protocol: { scoring: 'on-submit', stopWhenSolved: false },
    maxTurns: (turns) => turns,
    begin(context): StrategyAgent {
      const actions = taskPlugin.goldActions(context.task).slice(0, submits ? undefined : -1);
      const move = async (history: readonly unknown[]) =>
        history.length < actions.length ? { kind: 'action' as const, action: actions[history.length]!, reply: actions[history.length]! } : { kind: 'stop' as const };
      return {
        usage: emptyUsage(),
        move,
        act: async (history) => {
          const next = await move(history);
          return next.kind === 'action' ? next.action : 'submit';
        },
        record: () => ({ messages: [], tools: [], modelTurns: [], turnMessages: [], turnRan: [] }),
      };
    },
  };
}

describe.skipIf(skipWithoutEngine(engine, 'eval over unscorable episodes'))('eval: episodes whose verifier gives no reward', () => {
  let env: TaskDirEnv;
  let removeData: () => Promise<void>;

  beforeAll(async () => {
    const temp = await makeTempDir();
    removeData = temp.remove;
    // Sorted by name: 0 bad-reward, 1 hello-txt (scores 1), 2 no-reward.
    for (const name of ['bad-reward', 'no-reward']) await cp(join(FIXTURES, 'failing', name), join(temp.dir, name), { recursive: true });
    await cp(join(FIXTURES, 'own', 'hello-txt'), join(temp.dir, 'hello-txt'), { recursive: true });
    [env] = (await createTaskEnvs({ data: temp.dir, keepWarmMs: 0 }, 1)) as [TaskDirEnv];
  }, 600_000);
  afterAll(async () => {
    await env?.close();
    await removeData?.();
  });

  const play = async (submits: boolean): Promise<EvalEpisodeLog[]> => {
    const logs: EvalEpisodeLog[] = [];
    for (const task of env.tasks) logs.push(await playEpisode(env, goldStrategy(submits), task, { envName: 'task', stepScoring: taskPlugin.agent.stepScoring, dataset: 'fixtures', turns: 5 }));
    return logs;
  };

  for (const submits of [true, false]) {
    it(`${submits ? 'the agent submits' : 'the runner submits at the turn limit'}: not scored with the reason, left out of the mean, counted`, async () => {
      const logs = await play(submits);
      expect(logs.map((l) => [l.summary.max_reward, l.not_scored?.reason, l.truncated !== undefined])).toEqual([
        [0, 'reward-invalid', true],
        [1, undefined, false],
        [0, 'reward-missing', true],
      ]);
      expect(logs[0]!.not_scored!.message).toContain('"passed\\n"');
      expect(summarize(logs)).toMatchObject({ episodes: 3, successRate: 1 / 3, avgMaxReward: 1, truncated: 2, notScored: 2, notScoredByReason: { 'reward-invalid': 1, 'reward-missing': 1 } });
    }, 300_000);
  }
});
