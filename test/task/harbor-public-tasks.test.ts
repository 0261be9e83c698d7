/**
 * Real public Harbor tasks through the task env, in Docker: each oracle (`solution/solve.sh`)
 * scores 1 and a plausible wrong solution 0, as `intercode run task --data DIR` plays them.
 *
 * The tasks are public data, not this repository's: they are read from
 * `shared/harbor-public-tasks/` beside the checkout (`$INTERCODE_SHARED` names another shared
 * folder), one folder a task, each with a SOURCE.md (repository, path, commit, licence, and
 * every change made so that it runs offline here). Their images are built FROM our offline
 * `debian:bookworm-slim` base, not the `ubuntu:24.04` or `python:3.11-slim` they name (no
 * registry here), with the same programs from Debian's packages; their verifiers run
 * Debian's pytest instead of installing uv and pytest from the network at verify time.
 *
 * Policy: without that folder the tests skip saying why (also under CI: the folder is
 * data that only shared/ may hold); with it, a missing engine fails them under CI.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTaskEnvs, type TaskDirEnv } from '../../envs/task/index.js';
import { taskPlugin } from '../../envs/task/plugin.js';
import { sharedDir } from '../../bench/vs-intercode.js';
import type { StepResult } from '../../src/env/types.js';
import { ConfigError } from '../../src/errors.js';
import { dockerTestFile, skipWithoutEngine } from '../setup/docker.js';

const { engine } = await dockerTestFile();
const PUBLIC = join(sharedDir(), 'harbor-public-tasks');
const missing = existsSync(PUBLIC) ? undefined : `${PUBLIC} is absent (the public Harbor tasks are shared data, not in the repository)`;
if (missing) console.warn(`skipping the public Harbor tasks: ${missing}`);

/** Each task that scores: its id, and a plausible wrong solution that must score 0. */
const SCORED: ReadonlyArray<{ id: string; source: string; wrong: string }> = [
  { id: 'cookbook-simple-task', source: 'harbor-framework/harbor-cookbook, Apache-2.0', wrong: 'echo "Hello world" > hello.txt' },
  { id: 'cookbook-skills', source: 'harbor-framework/harbor-cookbook, Apache-2.0', wrong: 'cp /skills/generate-greeting/SKILL.md /app/greeting.txt' },
  {
    id: 'infrabench-db-wal-recovery',
    source: 'XuanmiaoG/InfraBench (Terminal-Bench 2 db-wal-recovery), Apache-2.0',
    // The base data only: the WAL is left encrypted, so 5 of the 11 records.
    wrong: `sqlite3 -json "file:/app/main.db?mode=ro" "SELECT id, name, value FROM items ORDER BY id" > /app/recovered.json`,
  },
  { id: 'infrabench/hello-world', source: 'XuanmiaoG/InfraBench, Apache-2.0 (allow_internet = true: run offline)', wrong: 'touch hello.txt' },
  { id: 'harbor-test/simple-task', source: 'meridianlabs-ai/inspect_harbor, MIT', wrong: "echo 'print(2 + 3)' > /workspace/solution.py" },
  { id: 'ivanleomk/hello-world', source: 'Kaggle/kaggle-benchmark-starter-template, Apache-2.0', wrong: "printf 'Hello, world!' > /app/hello.txt" },
];
const MULTI_REWARD = 'cookbook-multi-reward';

describe.skipIf(missing !== undefined || skipWithoutEngine(engine, 'public Harbor tasks'))('real public Harbor tasks in Docker', () => {
  let env: TaskDirEnv;

  /** Plays `actions` on `taskId` then submits; the submit's result. */
  async function play(taskId: string, actions: readonly string[]): Promise<StepResult> {
    const task = env.tasks.find((t) => t.id === taskId);
    expect(task, `task ${taskId} in ${PUBLIC}`).toBeDefined();
    await env.reset({ task: task! });
    for (const action of actions) {
      const step = await env.step(action);
      expect(step.terminated || step.truncated, `${taskId}: ${action} ended the episode: ${step.observation}`).toBe(false);
    }
    return env.step('submit');
  }
  const oracle = (taskId: string) => taskPlugin.goldActions(env.tasks.find((t) => t.id === taskId)!).slice(0, -1);

  beforeAll(async () => {
    // One env for the dataset: each image is built once (the three hello tasks share one).
    [env] = await createTaskEnvs({ data: PUBLIC, internetTasksOffline: true, keepWarmMs: 0 }, 1);
  }, 900_000);
  afterAll(async () => {
    await env?.close();
  });

  it('reads the dataset: every task, named by [task] name or its folder', () => {
    expect(env.tasks.map((t) => t.id).sort()).toEqual([MULTI_REWARD, ...SCORED.map((t) => t.id)].sort());
  });

  for (const { id, source, wrong } of SCORED) {
    it(`${id} (${source}): the oracle scores 1, a wrong solution 0`, async () => {
      const right = await play(id, oracle(id));
      expect(right, right.info.truncation?.message).toMatchObject({ reward: 1, terminated: true, truncated: false });
      expect(right.info.score?.details).toMatchObject({ verifier: { rewardFile: 'reward.txt' } });
      const wrongResult = await play(id, [wrong]);
      expect(wrongResult).toMatchObject({ reward: 0, terminated: true, truncated: false });
    });
  }

  it(`${MULTI_REWARD}: two rewards and none named "reward" is refused, typed (reward-invalid), never a number`, async () => {
    // Harbor's own default metric (mean) refuses such a reward.json too: the recipe ships a
    // job config with a per-dimension metric. The verifier ran, and its parts say so.
    const right = await play(MULTI_REWARD, oracle(MULTI_REWARD));
    expect(right).toMatchObject({ terminated: false, truncated: true, info: { truncation: { reason: 'reward-invalid' } } });
    expect(right.info.truncation?.message).toContain('has several members and none named "reward"');
    const written = JSON.parse(String((right.info.truncation?.details as { content: string }).content)) as Record<string, number>;
    expect(written.correctness).toBe(1);
    expect(Object.keys(written).sort()).toEqual(['correctness', 'performance']);
    // A wrong solution (keeps the lowest id of each email): correctness 0, still refused.
    const wrongProgram = 'def deduplicate(records):\n    seen = {}\n    for r in records:\n        seen.setdefault(r["email"].lower(), r)\n    return sorted(seen.values(), key=lambda r: r["id"])\n';
    const wrong = await play(MULTI_REWARD, [`printf '%s' '${wrongProgram}' > /app/deduplicate.py`]);
    expect(wrong).toMatchObject({ truncated: true, info: { truncation: { reason: 'reward-invalid' } } });
    expect(JSON.parse(String((wrong.info.truncation?.details as { content: string }).content))).toMatchObject({ correctness: 0 });
  });

  it('infrabench/hello-world asks for internet: refused without --internet-tasks-offline, naming it', async () => {
    const error = await createTaskEnvs({ data: PUBLIC }, 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain('infrabench/hello-world');
  });
});
