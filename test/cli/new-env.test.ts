/**
 * The promise of docs/new-env.md: an env added as one folder (envs/jq/) plus one line in
 * envs/index.ts is reached by every command with no other edit. Each command runs as a user
 * runs it (the CLI from source, in a child process) on real Docker sandboxes:
 * - `run jq`: the gold policy scores 1 on every built-in task;
 * - `play jq`: typed filters are run, the gold's scores 1 and a wrong one less;
 * - `eval --env jq`: a recorded model (src/mock-llm) solves the tasks it was recorded solving;
 *   `replay` of its log and `rescore` of `collect --policy llm:…`'s rollouts agree with them;
 * - `collect --env jq`: the gold policy's demonstrations; `train --env jq` learns from them;
 * - `serve --env jq`: a session over /ws solves a task with the gold.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envPlugin } from '../../envs/index.js';
import type { Task } from '../../src/datasets/index.js';
import { loadDataset } from '../../src/datasets/index.js';
import { RecordedModel, startMockServer, type MockServer } from '../../src/mock-llm/index.js';
import { recordedEnvFence } from '../../envs/index.js';
import { packagePath } from '../../src/package-path.js';
import { intercodeFromSource, type CliRun } from '../setup/cli.js';
import { dockerTestFile, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { TestClient } from '../server/helpers.js';

const { engine } = await dockerTestFile();
const BUILTIN = packagePath('datasets', 'jq', 'ic_jq.json');
const MAIN = packagePath('src', 'cli', 'main.ts');
/** Sandboxes kept warm past a command would outlive the test: none are. */
const NOT_WARM = ['--keep-warm', '0'];

/** `intercode ...args` from source with `input` on its stdin. */
function intercodeWithInput(args: readonly string[], input: string): Promise<CliRun> {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(input);
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

const lastJson = (run: CliRun) => JSON.parse(run.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;

describe.skipIf(skipWithoutEngine(engine, 'every command over the jq env'))('every command reaches an env added as one folder plus one line (jq)', () => {
  const jq = envPlugin('jq', '--env');
  let dir: string;
  let data: string;
  let tasks: Task[];

  beforeAll(async () => {
    requireEngine(engine);
    dir = await mkdtemp(join(tmpdir(), 'intercode-new-env-'));
    // Three tasks keep the slower commands short; `run` plays all of the built-in ones.
    tasks = (await loadDataset(BUILTIN)).slice(0, 3);
    data = join(dir, 'tasks.json');
    await writeFile(data, JSON.stringify(JSON.parse(await readFile(BUILTIN, 'utf8')).slice(0, 3)));
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('run: the gold policy scores 1 on every built-in task', async () => {
    const run = await intercodeFromSource(['run', 'jq', '--json', ...NOT_WARM]);
    expect(run.code, run.stderr).toBe(0);
    const summary = lastJson(run) as { episodes: number; solved: number; tasks: { reward: number }[] };
    expect(summary.episodes).toBe((await loadDataset(BUILTIN)).length);
    expect(summary.tasks.map((t) => t.reward)).toEqual(summary.tasks.map(() => 1));
  }, 300_000);

  it('play: typed filters run on the document; the gold scores 1, a wrong answer less', async () => {
    const wrong = '.orders | map(.id)';
    const run = await intercodeWithInput(['play', 'jq', '--data', data], `${tasks[0]!.gold}\nsubmit\n${wrong}\nsubmit\n`);
    expect(run.code, run.stderr).toBe(0);
    const rewards = [...run.stdout.matchAll(/reward (\d\.\d\d)/g)].map((m) => Number(m[1]));
    expect(rewards[0]).toBe(1);
    expect(rewards[1]).toBeLessThan(1);
    expect(run.stdout).toContain('101\n104\n');
  }, 300_000);

  it('eval, replay, collect llm:… and rescore: a recorded model over the jq prompt solves the tasks it was recorded solving', async () => {
    const episode = (query: string, actions: string[]) => ({
      environment: 'ic_jq',
      query,
      turn_history: { actions, observations: actions.map(() => ''), rewards: actions.map(() => 0), valid_action: actions.map(() => true) },
      summary: { max_reward: 0 },
    });
    const recording = join(dir, 'recording.json');
    // Task 0: a wrong filter, then the gold; task 1: the gold; task 2: a wrong filter only.
    await writeFile(recording, JSON.stringify({ 0: episode(tasks[0]!.query, ['.orders[].id', String(tasks[0]!.gold)]), 1: episode(tasks[1]!.query, [String(tasks[1]!.gold)]), 2: episode(tasks[2]!.query, ['.orders[0].id']) }));
    let model: MockServer | undefined;
    try {
      model = await startMockServer(await RecordedModel.load(recording, recordedEnvFence), 0);
      const run = await intercodeFromSource(['eval', '--env', 'jq', '--data', data, '--out', join(dir, 'eval'), '--strategy', 'try-again', '--turns', '3', '--model', 'recorded', '--base-url', model.baseUrl, '--api-key', 'none', '--json', ...NOT_WARM]);
      expect(run.code, run.stderr).toBe(0);
      expect(lastJson(run)).toMatchObject({ episodes: 3, successRate: 2 / 3, truncated: 0 });
      const log = join(dir, 'eval', 'ic_jq_try-again_recorded_3_turns.json');
      expect(await readFile(log, 'utf8')).toContain(tasks[0]!.query);
      // replay re-executes eval's log, rescore the rollouts of collect's LLM policy: each agrees with what was recorded.
      const replay = await intercodeFromSource(['replay', log, '--env', 'jq', '--data', data, '--json']);
      expect(replay.code, replay.stderr).toBe(0);
      expect(lastJson(replay)).toMatchObject({ episodes: 3, agreement: 1 });
      const rollouts = join(dir, 'rollouts.jsonl');
      const collect = await intercodeFromSource(['collect', '--env', 'jq', '--data', data, '--policy', 'llm:recorded', '--base-url', model.baseUrl, '--api-key', 'none', '--out', rollouts, '--json', ...NOT_WARM]);
      expect(collect.code, collect.stderr).toBe(0);
      expect(lastJson(collect)).toMatchObject({ episodes: 3, solved: 2 });
      const rescore = await intercodeFromSource(['rescore', rollouts, '--env', 'jq', '--data', data, '--json']);
      expect(rescore.code, rescore.stderr).toBe(0);
      expect(lastJson(rescore)).toMatchObject({ episodes: 3, agreement: 1 });
    } finally {
      await model?.close();
    }
  }, 300_000);

  it('collect and train: the gold policy\'s demonstrations, and a policy trained on them', async () => {
    const demos = join(dir, 'demos.jsonl');
    const collect = await intercodeFromSource(['collect', '--env', 'jq', '--data', data, '--policy', 'gold', '--out', demos, '--json', ...NOT_WARM]);
    expect(collect.code, collect.stderr).toBe(0);
    expect(lastJson(collect)).toMatchObject({ episodes: 3, solved: 3 });
    const lines = (await readFile(demos, 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as { env: string; actions: string[] });
    // Written as episodes end (in parallel): compared in any order.
    const sorted = (rows: unknown[][]) => rows.map((row) => JSON.stringify(row)).sort();
    expect(sorted(lines.map((l) => [l.env, l.actions]))).toEqual(sorted(tasks.map((t) => ['jq', jq.goldActions(t)])));

    const train = await intercodeFromSource(['train', '--env', 'jq', '--data', data, '--demos', demos, '--run', 'jq', '--checkpoints', join(dir, 'runs'), '--bc-epochs', '2', '--pg-iterations', '1', '--pg-episodes', '2', '--eval-every', '1', '--json', ...NOT_WARM]);
    expect(train.code, train.stderr).toBe(0);
    expect(lastJson(train)).toMatchObject({ trainTasks: expect.any(Number), final: expect.any(Object) });
  }, 300_000);

  it('serve: a session over /ws solves a task with the gold', async () => {
    const { INTERCODE_SERVE_TOKEN: _token, ...env } = process.env;
    const server = spawn(process.execPath, ['--import', 'tsx', MAIN, 'serve', '--env', 'jq', '--data', data, '--port', '0', '--max-sessions', '1', '--spares', '0'], { stdio: ['ignore', 'pipe', 'pipe'], env });
    let stderr = '';
    server.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => server.once('close', resolve));
    try {
      const ready = await new Promise<{ url: string; env: string; tasks: number }>((resolve, reject) => {
        let out = '';
        server.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]!));
        });
        void exited.then((code) => reject(new Error(`serve exited (${code}) before it was ready: ${stderr}`)));
      });
      expect(ready).toMatchObject({ env: 'jq', tasks: 3 });
      const client = new TestClient(ready.url);
      await client.opened;
      expect((await client.request({ type: 'reset', data: { task_id: 1 } })).type).toBe('observation');
      let last: Awaited<ReturnType<TestClient['request']>> | undefined;
      for (const code of jq.goldActions(tasks[1]!)) last = await client.request({ type: 'step', data: { code } });
      expect(last?.data).toMatchObject({ reward: 1, done: true });
      client.send({ type: 'close' });
      await client.closed;
    } finally {
      server.kill('SIGTERM');
      expect(await exited, stderr).toBe(0);
    }
  }, 300_000);
});
