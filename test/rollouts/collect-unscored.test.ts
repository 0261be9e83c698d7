/**
 * `intercode collect --policy llm:…` (the CLI, a child process from source) with the ReAct
 * strategy and the recorded model over Harbor task fixtures in Docker: two whose verifier
 * gives no reward (a reward that is not a number, no reward file) and one the recording
 * solves. Each unscorable episode's rollout record says `not_scored` with the reason (its
 * `reward` 0 kept for trainers that need a number), and the summary leaves it out of the
 * mean reward and counts it by reason.
 */
import { readFileSync } from 'node:fs';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordedEnvFence } from '../../envs/index.js';
import { RecordedModel, startMockServer, type MockServer } from '../../src/mock-llm/index.js';
import { packagePath } from '../../src/package-path.js';
import { intercodeFromSource } from '../setup/cli.js';
import { dockerTestFile, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { recordedReactEpisode } from '../setup/recorded-model.js';

const { engine } = await dockerTestFile();
const FIXTURES = packagePath('test', 'fixtures', 'harbor-tasks');

describe.skipIf(skipWithoutEngine(engine, 'collect --policy llm over unscorable episodes'))('collect --policy llm: episodes whose verifier gives no reward', () => {
  let dir: string;
  let server: MockServer;

  beforeAll(async () => {
    requireEngine(engine);
    dir = await mkdtemp(join(tmpdir(), 'intercode-collect-unscored-'));
    const data = join(dir, 'data');
    for (const name of ['bad-reward', 'no-reward']) await cp(join(FIXTURES, 'failing', name), join(data, name), { recursive: true });
    await cp(join(FIXTURES, 'own', 'hello-txt'), join(data, 'hello-txt'), { recursive: true });
    const query = (name: string) => readFileSync(join(data, name, 'instruction.md'), 'utf8');
    await writeFile(
      join(dir, 'recording.json'),
      JSON.stringify({
        0: recordedReactEpisode(query('bad-reward'), ['execute[touch /app/done]', 'submit']),
        1: recordedReactEpisode(query('hello-txt'), ["execute[echo 'Hello, world!' > /app/hello.txt]", 'submit']),
        2: recordedReactEpisode(query('no-reward'), ['execute[touch /app/done]', 'submit']),
      }),
    );
    server = await startMockServer(await RecordedModel.load(join(dir, 'recording.json'), recordedEnvFence), 0);
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('records not_scored with the reason; the summary leaves them out of the mean and counts them', async () => {
    const out = join(dir, 'rollouts.jsonl');
    const run = await intercodeFromSource([
      'collect', '--env', 'task', '--data', join(dir, 'data'), '--policy', 'llm:recorded', '--base-url', server.baseUrl, '--strategy', 'react',
      '--turn-limit', '3', '--out', out, '--keep-warm', '0', '--json',
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ episodes: 3, solved: 1, meanReward: 1, notScored: 2, notScoredByReason: { 'reward-invalid': 1, 'reward-missing': 1 } });
    const records = (await readFile(out, 'utf8')).split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
    const byTask = Object.fromEntries(records.map((r) => [r.task_id, [r.reward, r.truncated, (r.not_scored as { reason: string } | null)?.reason ?? null]]));
    expect(byTask).toEqual({ 'bad-reward': [0, true, 'reward-invalid'], 'hello-txt': [1, false, null], 'no-reward': [0, true, 'reward-missing'] });
  }, 300_000);
});
