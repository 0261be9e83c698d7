/**
 * The task-directory env (Harbor tasks) end to end in Docker sandboxes, on the fixtures
 * under test/fixtures/harbor-tasks: oracle 1.0 and a wrong solution 0 (reward.txt and
 * reward.json with named parts, the verifier's env and user), every verifier failure a
 * typed truncation (timeout, no reward file, not a number), compose and internet tasks
 * refused, and a hostile agent that plants rewards, leaves processes behind and links
 * /tests and /logs elsewhere: it never fools the verifier.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskPlugin } from '../../envs/task/plugin.js';
import { createTaskEnvs, type TaskDirEnv } from '../../envs/task/index.js';
import type { StepResult } from '../../src/env/types.js';
import { ConfigError, DatasetError, EnvStateError } from '../../src/errors.js';
import { packagePath } from '../../src/package-path.js';
import { dockerTestFile, skipWithoutEngine } from '../setup/docker.js';

const { engine } = await dockerTestFile();
const FIXTURES = packagePath('test', 'fixtures', 'harbor-tasks');

/** Plays `actions` then submits; the submit's result. */
async function play(env: TaskDirEnv, taskId: string, actions: readonly string[]): Promise<StepResult> {
  const task = env.tasks.find((t) => t.id === taskId)!;
  await env.reset({ task });
  for (const action of actions) {
    const step = await env.step(action);
    expect(step.terminated || step.truncated).toBe(false);
  }
  return env.step('submit');
}

const gold = (env: TaskDirEnv, taskId: string) => taskPlugin.goldActions(env.tasks.find((t) => t.id === taskId)!).slice(0, -1);

describe.skipIf(skipWithoutEngine(engine, 'task env'))('task env in Docker', () => {
  let own: TaskDirEnv;
  let failing: TaskDirEnv;
  let hostile: TaskDirEnv;

  beforeAll(async () => {
    [own] = await createTaskEnvs({ data: join(FIXTURES, 'own'), keepWarmMs: 0 }, 1);
    [failing] = await createTaskEnvs({ data: join(FIXTURES, 'failing'), keepWarmMs: 0 }, 1);
    [hostile] = await createTaskEnvs({ data: join(FIXTURES, 'hostile'), keepWarmMs: 0 }, 1);
  }, 600_000);
  afterAll(async () => {
    await own?.close();
    await failing?.close();
    await hostile?.close();
  });

  it('reads both task.toml versions: the folder name, or [task] name', () => {
    expect(own.tasks.map((t) => t.id)).toEqual(['hello-txt', 'intercode-fixtures/sum-json']);
    expect(own.tasks[0]!.query).toContain('Hello, world!');
  });

  it('starts the shell in the Dockerfile WORKDIR, with no /tests, /logs/verifier or /solution', async () => {
    await own.reset({ task: 1 });
    expect((await own.step('pwd')).observation).toBe('/app\n');
    expect((await own.step('cat numbers.txt | wc -l')).observation).toBe('4\n');
    expect((await own.step('ls -d /tests /logs/verifier /solution 2>&1 | wc -l; ls /tests 2>&1 | head -1')).observation).toContain('No such file');
    await own.step('skip');
  });

  it('reward.txt: the oracle scores 1, a wrong solution 0', async () => {
    expect(await play(own, 'hello-txt', gold(own, 'hello-txt'))).toMatchObject({ reward: 1, terminated: true, truncated: false });
    const wrong = await play(own, 'hello-txt', ['echo "Hello world" > /app/hello.txt']);
    expect(wrong).toMatchObject({ reward: 0, terminated: true, truncated: false });
    expect(wrong.info.score?.parts).toEqual({ reward: 0 });
  });

  it('reward.json: named parts kept, the verifier run as its user with its env; oracle 1, wrong 0', async () => {
    const right = await play(own, 'intercode-fixtures/sum-json', gold(own, 'intercode-fixtures/sum-json'));
    expect(right).toMatchObject({ reward: 1, terminated: true, truncated: false });
    expect(right.info.score?.parts).toEqual({ reward: 1, exists: 1, correct: 1, as_nobody: 1 });
    expect(right.info.score?.details).toMatchObject({ verifier: { exitCode: 0, rewardFile: 'reward.json' } });
    const wrong = await play(own, 'intercode-fixtures/sum-json', ['echo 41 > sum.txt']);
    expect(wrong).toMatchObject({ reward: 0, terminated: true, truncated: false });
    expect(wrong.info.score?.parts).toEqual({ reward: 0, exists: 1, correct: 0, as_nobody: 1 });
  });

  it('a pooled sandbox is clean for the next episode: nothing of the last one, no /tests', async () => {
    await play(own, 'hello-txt', gold(own, 'hello-txt'));
    await own.reset({ task: 0 });
    expect((await own.step('ls -A /app; ls -d /tests /solution /logs/verifier 2>/dev/null; echo end')).observation).toBe('end\n');
    await own.step('skip');
  });

  it('peekScore is refused: the verifier runs once, at the end', async () => {
    await own.reset({ task: 0 });
    await expect(own.peekScore()).rejects.toBeInstanceOf(EnvStateError);
    await own.step('skip');
  });

  it('a verifier past its time limit ends the episode truncated (verifier-timeout), never scored', async () => {
    const started = performance.now();
    const result = await play(failing, 'slow-verifier', gold(failing, 'slow-verifier'));
    expect(result).toMatchObject({ reward: 0, terminated: false, truncated: true, info: { truncation: { reason: 'verifier-timeout' } } });
    expect(performance.now() - started).toBeLessThan(25_000);
  });

  it('no reward file: truncated, reward-missing, with the end of the verifier output', async () => {
    const result = await play(failing, 'no-reward', gold(failing, 'no-reward'));
    expect(result).toMatchObject({ truncated: true, terminated: false, info: { truncation: { reason: 'reward-missing' } } });
    expect(result.info.truncation?.details).toMatchObject({ output: 'done is there\n', exitCode: 0 });
  });

  it('a reward that is not a number: truncated, reward-invalid, saying what was read', async () => {
    const result = await play(failing, 'bad-reward', gold(failing, 'bad-reward'));
    expect(result).toMatchObject({ truncated: true, info: { truncation: { reason: 'reward-invalid' } } });
    expect(result.info.truncation?.message).toContain('"passed\\n"');
  });

  describe('a hostile agent never fools the verifier (it writes a reward only on success)', () => {
    const planted = 'mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt';
    const attacks: Record<string, string[]> = {
      'a planted /logs/verifier/reward.txt': [planted],
      'a planted reward.json': ['mkdir -p /logs/verifier && echo \'{"reward": 1}\' > /logs/verifier/reward.json'],
      'a background process that keeps writing the reward': [`nohup setsid bash -c 'while :; do ${planted} 2>/dev/null; sleep 0.01; done' >/dev/null 2>&1 &`],
      'a process of another user that keeps writing it': [
        `mkdir -p /logs/verifier && chmod 777 /logs/verifier && (runuser -u nobody -- bash -c 'while :; do echo 1 > /logs/verifier/reward.txt; sleep 0.01; done' >/dev/null 2>&1 &)`,
      ],
      'a process waiting for /tests to rewrite test.sh': [
        `nohup bash -c 'while ! [ -f /tests/test.sh ]; do sleep 0.005; done; echo "echo 1 > /logs/verifier/reward.txt" > /tests/test.sh' >/dev/null 2>&1 &`,
      ],
      '/logs a link to a folder holding a reward': ['mkdir -p /tmp/fake/verifier && echo 1 > /tmp/fake/verifier/reward.txt && rm -rf /logs && ln -s /tmp/fake /logs'],
      '/logs/verifier a link to a folder holding a reward': ['mkdir -p /tmp/v /logs && echo 1 > /tmp/v/reward.txt && ln -s /tmp/v /logs/verifier'],
      '/tests a link to a test.sh of its own': [
        'mkdir -p /tmp/t && printf "#!/bin/bash\\necho 1 > /logs/verifier/reward.txt\\n" > /tmp/t/test.sh && chmod +x /tmp/t/test.sh && ln -s /tmp/t /tests',
      ],
      '/logs a file': ['rm -rf /logs && echo 1 > /logs'],
    };
    for (const [name, actions] of Object.entries(attacks)) {
      it(name, async () => {
        const result = await play(hostile, 'writes-on-success', actions);
        // Never scored 1: the verifier found no hello.txt and wrote nothing.
        expect(result.reward).toBe(0);
        expect(result).toMatchObject({ truncated: true, info: { truncation: { reason: 'reward-missing' } } });
      });
    }

    it('the agent cannot read the tests before the verifier: no /tests, and their text nowhere', async () => {
      await hostile.reset({ task: 0 });
      const seen = await hostile.step('grep -rlaF VERIFIER-SECRET-7f3a / --exclude-dir=proc --exclude-dir=sys 2>/dev/null | head -3; ls /tests 2>&1');
      expect(seen.observation).toBe('ls: cannot access \'/tests\': No such file or directory\n');
      await hostile.step('skip');
    });

    it('the same task solved scores 1 (the attacks failed only because they were attacks)', async () => {
      const result = await play(hostile, 'writes-on-success', ["echo 'Hello, world!' > /app/hello.txt"]);
      expect(result).toMatchObject({ reward: 1, terminated: true });
    });
  });

  it('refuses a compose environment, naming the file', async () => {
    const error = await createTaskEnvs({ data: join(FIXTURES, 'refused', 'compose') }, 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DatasetError);
    expect((error as DatasetError).message).toContain(join('compose-task', 'environment', 'docker-compose.yaml'));
    expect((error as DatasetError).message).toContain('compose environment is not supported');
  });

  it('refuses a task that asks for internet unless told to run it offline', async () => {
    const data = join(FIXTURES, 'refused', 'internet');
    const error = await createTaskEnvs({ data }, 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain('online-task');
    expect((error as ConfigError).message).toContain('--internet-tasks-offline');
    const [offline] = await createTaskEnvs({ data, internetTasksOffline: true, keepWarmMs: 0 }, 1);
    try {
      await offline!.reset({ task: 0 });
      expect((await offline!.step('cat /sys/class/net/*/operstate 2>/dev/null | sort -u; ls /sys/class/net')).observation).toBe('unknown\nlo\n');
      expect(await offline!.step('submit')).toMatchObject({ reward: 1 });
    } finally {
      await offline!.close();
    }
  });
});
