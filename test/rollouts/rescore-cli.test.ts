/**
 * `intercode rescore` end to end in real bash sandboxes: rollouts collected with the recorded
 * model (`collect --policy llm:recorded`) are played again and every episode gets its recorded
 * reward and named reward components back, from records, hf-messages and ATIF lines alike; a
 * stored rollout whose reward or components were forged (an unsolved episode marked 1.0, a
 * part changed) is reported as disagreeing.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILTIN_BASH_TASKS } from '../../envs/bash/index.js';
import { RecordedModel, startMockServer, type MockServer } from '../../src/mock-llm/index.js';
import { formatRecord, type RolloutRecord } from '../../src/rollouts/index.js';
import { dockerTestFile, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { intercodeFromSource as intercode } from '../setup/cli.js';
import { recordedEnvFence } from '../../envs/index.js';
import { recordedBashEpisode } from '../setup/recorded-model.js';

const { engine } = await dockerTestFile();

const lines = (file: string) => readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));

describe.skipIf(skipWithoutEngine(engine, 'rescore tests'))('intercode rescore', () => {
  let dir: string;
  let server: MockServer;
  let records: RolloutRecord[];
  const out = () => join(dir, 'rollouts.jsonl');

  beforeAll(async () => {
    requireEngine(engine);
    dir = await mkdtemp(join(tmpdir(), 'intercode-rescore-'));
    const tasks = JSON.parse(readFileSync(BUILTIN_BASH_TASKS, 'utf8')) as { query: string; gold: string }[];
    // Task 0: a wrong command, then the gold; 1: the gold; 2: never solved (partial credit); 3: a file change that is wrong.
    await writeFile(
      join(dir, 'recording.json'),
      JSON.stringify({
        0: recordedBashEpisode(tasks[0]!.query, ['ls /no-such-dir', tasks[0]!.gold]),
        1: recordedBashEpisode(tasks[1]!.query, [tasks[1]!.gold]),
        2: recordedBashEpisode(tasks[2]!.query, ['echo 0']),
        3: recordedBashEpisode(tasks[3]!.query, ['touch /testbed/intruder']),
      }),
    );
    server = await startMockServer(await RecordedModel.load(join(dir, 'recording.json'), recordedEnvFence), 0);
    const run = await intercode([
      'collect', '--env', 'bash', '--policy', 'llm:recorded', '--base-url', server.baseUrl, '--samples-per-task', '2',
      '--limit', '4', '--turn-limit', '3', '--tokens', 'ids', '--out', out(), '--parallel', '2', '--json',
    ]);
    expect(run.code, run.stderr).toBe(0);
    records = lines(out());
    expect(records).toHaveLength(8);
  }, 300_000);
  afterAll(async () => {
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('gives every collected episode its recorded reward and components back, from records, hf-messages and ATIF lines', async () => {
    const mixed = join(dir, 'mixed.jsonl');
    writeFileSync(mixed, records.map((r, i) => `${formatRecord(r, (['jsonl', 'hf-messages', 'atif'] as const)[i % 3], '0')}\n`).join(''));
    const run = await intercode(['rescore', mixed, '--env', 'bash', '--parallel', '2', '--json']);
    expect(run.stderr).not.toMatch(/intercode: /);
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report).toMatchObject({ episodes: 8, agreeingEpisodes: 8, agreement: 1, withComponents: 8, disagreements: [] });
    expect(report.meanReward).toBeCloseTo(report.recordedMeanReward, 9);
    expect(records.filter((r) => r.reward === 1)).toHaveLength(4);
  }, 300_000);

  it('reports forged rewards and components as disagreeing', async () => {
    const forged = records.map((r) => structuredClone(r));
    const unsolved = forged.find((r) => r.task_id === '2')!;
    unsolved.reward = 1;
    const changed = forged.find((r) => r.task_id === '3')!;
    const part = Object.keys(changed.reward_components)[0]!;
    changed.reward_components[part] = changed.reward_components[part]! + 0.5;
    const file = join(dir, 'forged.jsonl');
    writeFileSync(file, forged.map((r) => `${formatRecord(r, 'jsonl', '0')}\n`).join(''));
    const run = await intercode(['rescore', file, '--env', 'bash', '--parallel', '2', '--json']);
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report).toMatchObject({ episodes: 8, agreeingEpisodes: 6, agreement: 0.75 });
    expect(report.disagreements.map((d: { sessionId: string }) => d.sessionId).sort()).toEqual([unsolved.session_id, changed.session_id].sort());
    const lie = report.disagreements.find((d: { sessionId: string }) => d.sessionId === unsolved.session_id);
    expect(lie.recordedReward).toBe(1);
    expect(lie.reward).toBeLessThan(1);
  }, 300_000);
});
