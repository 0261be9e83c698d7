/**
 * `intercode rescore` (the CLI, a child process from source) over rollouts of Harbor task
 * fixtures in Docker whose verifier gives no reward (a reward that is not a number, no reward
 * file) and one the recording solves, collected with the recorded model: a replay that ends
 * truncated is not scored (by reason, left out of the mean, `reward` null), and an episode
 * whose record says `not_scored` is compared as such — the same reason agrees; a record that
 * claims a score the replay cannot give, or no score where the replay gives one, disagrees.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordedEnvFence } from '../../envs/index.js';
import { RecordedModel, startMockServer, type MockServer } from '../../src/mock-llm/index.js';
import { packagePath } from '../../src/package-path.js';
import { formatRecord, type RolloutRecord } from '../../src/rollouts/index.js';
import { intercodeFromSource } from '../setup/cli.js';
import { dockerTestFile, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { recordedReactEpisode } from '../setup/recorded-model.js';

const { engine } = await dockerTestFile();
const FIXTURES = packagePath('test', 'fixtures', 'harbor-tasks');

describe.skipIf(skipWithoutEngine(engine, 'rescore over unscorable episodes'))('rescore: episodes whose verifier gives no reward', () => {
  let dir: string;
  let server: MockServer;
  let records: RolloutRecord[];
  const data = () => join(dir, 'data');
  const rescore = (file: string, json: boolean) =>
    intercodeFromSource(['rescore', file, '--env', 'task', '--data', data(), '--parallel', '1', ...(json ? ['--json'] : [])]);

  beforeAll(async () => {
    requireEngine(engine);
    dir = await mkdtemp(join(tmpdir(), 'intercode-rescore-unscored-'));
    for (const name of ['bad-reward', 'no-reward']) await cp(join(FIXTURES, 'failing', name), join(data(), name), { recursive: true });
    await cp(join(FIXTURES, 'own', 'hello-txt'), join(data(), 'hello-txt'), { recursive: true });
    const query = (name: string) => readFileSync(join(data(), name, 'instruction.md'), 'utf8');
    await writeFile(
      join(dir, 'recording.json'),
      JSON.stringify({
        0: recordedReactEpisode(query('bad-reward'), ['execute[touch /app/done]', 'submit']),
        1: recordedReactEpisode(query('hello-txt'), ["execute[echo 'Hello, world!' > /app/hello.txt]", 'submit']),
        2: recordedReactEpisode(query('no-reward'), ['execute[touch /app/done]', 'submit']),
      }),
    );
    server = await startMockServer(await RecordedModel.load(join(dir, 'recording.json'), recordedEnvFence), 0);
    const out = join(dir, 'rollouts.jsonl');
    const run = await intercodeFromSource([
      'collect', '--env', 'task', '--data', data(), '--policy', 'llm:recorded', '--base-url', server.baseUrl, '--strategy', 'react',
      '--turn-limit', '3', '--out', out, '--keep-warm', '0', '--json',
    ]);
    expect(run.code, run.stderr).toBe(0);
    records = readFileSync(out, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as RolloutRecord);
    expect(records.map((r) => [r.task_id, r.not_scored?.reason ?? null]).sort()).toEqual([['bad-reward', 'reward-invalid'], ['hello-txt', null], ['no-reward', 'reward-missing']]);
  }, 300_000);
  afterAll(async () => {
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('counts replays that end truncated as not scored, by reason, out of the mean; records not scored for the same reason agree (records, hf-messages, ATIF)', async () => {
    const mixed = join(dir, 'mixed.jsonl');
    // Each episode in each format: a record's, an hf-messages line's and an ATIF trajectory's not_scored are all read.
    writeFileSync(mixed, (['jsonl', 'hf-messages', 'atif'] as const).flatMap((format) => records.map((r) => `${formatRecord(r, format, '0')}\n`)).join(''));
    const run = await rescore(mixed, true);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report).toMatchObject({
      episodes: 9, agreeingEpisodes: 9, agreement: 1, meanReward: 1, recordedMeanReward: 1,
      notScored: 6, notScoredByReason: { 'reward-invalid': 3, 'reward-missing': 3 }, recordedNotScored: 6, recordedNotScoredByReason: { 'reward-invalid': 3, 'reward-missing': 3 }, disagreements: [],
    });
  }, 300_000);

  it('reports a record that claims a score the replay cannot give, or none where it gives one, with the reason in text and --json', async () => {
    const forged = records.map((r) => structuredClone(r));
    const claimed = forged.find((r) => r.task_id === 'no-reward')!;
    claimed.not_scored = null;
    claimed.truncated = false;
    claimed.reward = 1;
    const denied = forged.find((r) => r.task_id === 'hello-txt')!;
    denied.not_scored = { reason: 'sandbox-lost', message: 'the container is gone' };
    const file = join(dir, 'forged.jsonl');
    writeFileSync(file, forged.map((r) => `${formatRecord(r, 'jsonl', '0')}\n`).join(''));
    const run = await rescore(file, true);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report).toMatchObject({ episodes: 3, agreeingEpisodes: 1, meanReward: 1, recordedMeanReward: 1, notScored: 2, recordedNotScored: 2, recordedNotScoredByReason: { 'reward-invalid': 1, 'sandbox-lost': 1 } });
    const bySession = Object.fromEntries(report.disagreements.map((d: { sessionId: string }) => [d.sessionId, d]));
    expect(bySession[claimed.session_id]).toMatchObject({ recordedReward: 1, reward: null, recordedNotScored: null, notScored: { reason: 'reward-missing' }, agrees: false });
    expect(bySession[denied.session_id]).toMatchObject({ recordedReward: null, reward: 1, recordedNotScored: { reason: 'sandbox-lost' }, notScored: null, agrees: false });
    const text = await rescore(file, false);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/mean reward +1\.000 of the 1 scored \(recorded: 1\.000 of the 1 scored\)/);
    expect(text.stdout).toMatch(/not scored +2 \(reward-invalid 1, reward-missing 1\); recorded: 2 \(reward-invalid 1, sandbox-lost 1\)/);
    expect(text.stdout).toMatch(/task \d+ sample 0 \(.+\): recorded 1 \(.*\), now not scored: reward-missing — .+/);
    expect(text.stdout).toMatch(/task \d+ sample 0 \(.+\): recorded not scored: sandbox-lost — the container is gone, now 1 \(.*\)/);
  }, 300_000);
});
