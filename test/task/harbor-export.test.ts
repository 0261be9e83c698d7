/**
 * `intercode export --format harbor` round trip in Docker: built-in bash, Python (MBPP- and
 * APPS-style) and CTF tasks exported as Harbor task directories, then played through the
 * task env: each oracle (solve.sh) scores 1.0, a wrong solution less (0 where InterCode's
 * reward is all or nothing), a wrong bash solution the same reward the bash env gives it,
 * and a Python solution that tries to write the verifier's reward and kill it scores 0.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bashPlugin } from '../../envs/bash/plugin.js';
import { ctfPlugin } from '../../envs/ctf/plugin.js';
import { pythonPlugin } from '../../envs/python/plugin.js';
import { taskPlugin } from '../../envs/task/plugin.js';
import { writeHarborTask } from '../../envs/task/harbor-writer.js';
import { createTaskEnvs, readTaskDirs, type TaskDirEnv } from '../../envs/task/index.js';
import type { EnvPlugin } from '../../envs/plugin.js';
import type { StepResult, TaskEnv } from '../../src/env/types.js';
import { EngineSet } from '../../src/sandbox/backends/engine-set.js';
import { dockerTestFile, skipWithoutEngine } from '../setup/docker.js';

const { engine } = await dockerTestFile();

/** Built-in tasks exported: bash 0 (an answer), 33 (a file added), Python py-01 (MBPP), py-23 (APPS), CTF 0. */
const PICKS: readonly { cli: EnvPlugin; ids: (tasks: TaskEnv['tasks']) => string[] }[] = [
  { cli: bashPlugin, ids: (tasks) => [tasks[0]!.id, tasks[33]!.id] },
  { cli: pythonPlugin, ids: () => ['py-01', 'py-23'] },
  { cli: ctfPlugin, ids: (tasks) => [tasks[0]!.id] },
];

async function play(env: TaskDirEnv, name: string, actions: readonly string[]): Promise<StepResult> {
  await env.reset({ task: env.tasks.find((t) => t.id === name)! });
  for (const action of actions) expect((await env.step(action)).terminated).toBe(false);
  return env.step('submit');
}

describe.skipIf(skipWithoutEngine(engine, 'harbor export'))('export --format harbor, round trip in Docker', () => {
  let out: string;
  let tasks: TaskDirEnv;
  const sources = new Map<string, TaskEnv>();
  const engines = EngineSet.local();

  beforeAll(async () => {
    out = await mkdtemp(join(tmpdir(), 'intercode-harbor-export-'));
    for (const { cli, ids } of PICKS) {
      const [env] = await cli.createEnvs({}, 1, { purpose: 'run', log: () => undefined, engines });
      sources.set(cli.name, env!);
      for (const id of ids(env!.tasks)) await writeHarborTask(out, await cli.harbor!.task(env!, env!.tasks.find((t) => t.id === id)!, {}));
    }
    [tasks] = await createTaskEnvs({ data: out, keepWarmMs: 0, engines }, 1);
  }, 900_000);
  afterAll(async () => {
    await tasks?.close();
    for (const env of sources.values()) await env.close();
    if (out) await rm(out, { recursive: true, force: true });
  });

  it('writes task directories the task env reads: task.toml, instruction.md, environment/, tests/test.sh, solution/solve.sh', async () => {
    const dirs = await readTaskDirs(out);
    expect(dirs.map((d) => d.config.name)).toEqual(['bash-0', 'bash-33', 'ctf-0', 'python-py-01', 'python-py-23']);
    const bash = dirs.find((d) => d.config.name === 'bash-33')!;
    expect(bash.config).toMatchObject({ verifier: { timeoutSec: 120 }, agent: { timeoutSec: 1800 }, environment: { allowInternet: false } });
    expect(bash.instruction).toContain('/logs/agent/answer.txt');
    expect(await readFile(join(bash.root, 'environment', 'Dockerfile'), 'utf8')).toMatch(/^FROM intercode-ts\/bash-testbed:[0-9a-f]+\n/);
    expect(JSON.parse(await readFile(join(bash.root, 'tests', 'expected.json'), 'utf8')).changes).toEqual([['testbed/reports/', '??']]);
  });

  it('every oracle scores 1.0 through the task env', async () => {
    for (const task of tasks.tasks) {
      const result = await play(tasks, task.id, taskPlugin.goldActions(task).slice(0, -1));
      expect({ task: task.id, reward: result.reward, truncated: result.truncated }).toEqual({ task: task.id, reward: 1, truncated: false });
    }
  });

  it('wrong solutions: CTF and Python 0, bash the reward the bash env gives the same work', async () => {
    expect((await play(tasks, 'ctf-0', ['mkdir -p /logs/agent && echo "flag{wrong}" > /logs/agent/answer.txt'])).reward).toBe(0);
    expect((await play(tasks, 'python-py-01', ['printf "def second_largest(v):\\n    return max(v)\\n" > /app/solution.py'])).reward).toBe(0);
    expect((await play(tasks, 'python-py-23', ['echo "print(0)" > /app/solution.py'])).reward).toBe(0);
    const work = 'mkdir -p /testbed/reports && grep INFO /testbed/logs/app.log > /testbed/reports/errors.txt; echo done';
    const bashEnv = sources.get('bash')!;
    await bashEnv.reset({ task: bashEnv.tasks[33]! });
    await bashEnv.step(work);
    const inBashEnv = await bashEnv.step('submit');
    const exported = await play(tasks, 'bash-33', [`mkdir -p /logs/agent; (${work}) > /logs/agent/answer.txt 2>&1`]);
    expect(inBashEnv.reward).toBeLessThan(0.9);
    expect(exported.reward).toBe(inBashEnv.reward);
    expect(exported.info.score?.parts).toEqual({ reward: inBashEnv.reward, ...inBashEnv.info.score?.parts });
  });

  it('a Python solution that writes the reward and kills the verifier scores 0: its code runs as nobody', async () => {
    const hostile = [
      'import json, os',
      'def second_largest(v):',
      '    return "wrong"',
      'try:',
      '    open("/logs/verifier/reward.json", "w").write(json.dumps({"reward": 1}))',
      'finally:',
      '    os.kill(os.getppid(), 15)',
    ].join('\n');
    const result = await play(tasks, 'python-py-01', [`cat > /app/solution.py <<'EOF'\n${hostile}\nEOF`]);
    expect(result).toMatchObject({ reward: 0, truncated: false });
  });

  it('a Python solution that returns an object equal to everything scores 0 (the verifier checks what its tests compare)', async () => {
    const hostile = ['class E:', '    def __eq__(self, other): return True', 'def second_largest(v):', '    return E()'].join('\n');
    const result = await play(tasks, 'python-py-01', [`cat > /app/solution.py <<'EOF'\n${hostile}\nEOF`]);
    expect(result).toMatchObject({ reward: 0, truncated: false });
  });
});
