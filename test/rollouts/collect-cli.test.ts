/**
 * `intercode collect --policy llm:…` end to end, over real HTTP and real sandboxes: the CLI
 * (a child process, from source) plays built-in bash tasks with the tools strategy against
 * the recorded model (started here), K samples per task, writing hf-messages with the
 * server's (synthetic) token ids and logprobs, then without tokens as rollout records;
 * a second run resumes; `intercode export` turns those into ATIF and back into InterCode's log layout, which
 * `intercode replay` re-scores to the recorded rewards.
 */
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILTIN_BASH_TASKS } from '../../envs/bash/index.js';
import { RecordedModel, startMockServer, type MockServer } from '../../src/mock-llm/index.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dockerTestFile, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { intercodeFromSource } from '../setup/cli.js';
import { recordedEnvFence } from '../../envs/index.js';
import { recordedBashEpisode } from '../setup/recorded-model.js';

const { engine } = await dockerTestFile();

const intercode = intercodeFromSource;

const lines = (file: string) => readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));

describe.skipIf(skipWithoutEngine(engine, 'collect --policy llm tests'))('collect --policy llm:… and export, end to end', () => {
  let dir: string;
  let server: MockServer;
  const K = 4;

  beforeAll(async () => {
    requireEngine(engine);
    dir = await mkdtemp(join(tmpdir(), 'intercode-collect-llm-'));
    const tasks = JSON.parse(readFileSync(BUILTIN_BASH_TASKS, 'utf8')) as { query: string; gold: string }[];
    // Task 0: a wrong command, then the gold; task 1: the gold at once; task 2: never solved (the turn limit ends it).
    await writeFile(
      join(dir, 'recording.json'),
      JSON.stringify({ 0: recordedBashEpisode(tasks[0]!.query, ['ls /no-such-dir', tasks[0]!.gold]), 1: recordedBashEpisode(tasks[1]!.query, [tasks[1]!.gold]), 2: recordedBashEpisode(tasks[2]!.query, ['echo 0']) }),
    );
    server = await startMockServer(await RecordedModel.load(join(dir, 'recording.json'), recordedEnvFence), 0);
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('writes K samples per task as hf-messages with token ids and logprobs lined up', async () => {
    const out = join(dir, 'rollouts.hf.jsonl');
    const run = await intercode([
      'collect', '--env', 'bash', '--policy', 'llm:recorded', '--base-url', server.baseUrl, '--strategy', 'tools', '--samples-per-task', String(K),
      '--limit', '3', '--turn-limit', '3', '--tokens', 'ids', '--format', 'hf-messages', '--out', out, '--parallel', '2', '--json',
    ]);
    expect(run.stderr).not.toMatch(/intercode: /);
    expect(run.code).toBe(0);
    const summary = JSON.parse(run.stdout);
    expect(summary).toMatchObject({ episodes: 12, written: 12, groups: 3, solved: 8, withTokenIds: 12, withLogprobs: 12, format: 'hf-messages' });
    const rows = lines(out);
    expect(rows).toHaveLength(12);
    for (const row of rows) {
      expect(row).toMatchObject({ env: 'bash', policy: 'llm:recorded', strategy: 'tools', temperature: 1, group_size: K, tokens_absent: null });
      expect(row.group_rewards).toHaveLength(K);
      expect(row.messages[0].role).toBe('system');
      row.completion_ids.forEach((ids: number[], i: number) => expect(row.logprobs[i]).toHaveLength(ids.length));
      expect(row.loss_mask).toHaveLength(row.token_ids.length);
      expect(row.loss_mask.reduce((a: number, b: number) => a + b, 0)).toBe(row.completion_ids.flat().length);
    }
    const byTask = (id: string) => rows.filter((r) => r.task_id === id);
    expect(byTask('0').map((r) => r.actions)).toEqual(Array(K).fill(['ls /no-such-dir', expect.any(String)]));
    expect(byTask('0').every((r) => r.reward === 1 && r.terminated && r.completion_ids.length === 2)).toBe(true);
    expect(byTask('2').every((r) => r.truncated && r.actions.length === 3 && r.reward < 1)).toBe(true);
    expect(rows.map((r) => r.seed).sort((a, b) => a - b)).toEqual(Array.from({ length: 12 }, (_, i) => i));
  }, 300_000);

  it('marks tokens absent without them, exports ATIF, and the ATIF converts back to a log that replay re-scores to the recorded rewards', async () => {
    const out = join(dir, 'rollouts.jsonl');
    const run = await intercode([
      'collect', '--env', 'bash', '--policy', 'llm:recorded', '--base-url', server.baseUrl, '--limit', '3', '--turn-limit', '3',
      '--tokens', 'none', '--out', out, '--parallel', '2', '--json',
    ]);
    expect(run.code).toBe(0);
    const records = lines(out);
    expect(records).toHaveLength(3);
    // The same command again resumes: every group is done, nothing is played, the file is kept.
    const before = readFileSync(out, 'utf8');
    const again = await intercode(['collect', '--env', 'bash', '--policy', 'llm:recorded', '--base-url', server.baseUrl, '--limit', '3', '--turn-limit', '3', '--tokens', 'none', '--out', out, '--json']);
    expect(JSON.parse(again.stdout)).toMatchObject({ episodes: 0, resumed: 3, written: 0 });
    expect(readFileSync(out, 'utf8')).toBe(before);
    for (const r of records) {
      expect(r.tokens).toMatchObject({ has_prompt_ids: false, has_completion_ids: false, has_logprobs: false, episode: null });
      expect(r.tokens.absent).toContain('the server gave no');
    }
    const atif = join(dir, 'rollouts.atif.jsonl');
    expect((await intercode(['export', out, '--format', 'atif', '--out', atif, '--json'])).stdout).toContain('"episodes":3');
    expect(lines(atif).every((t) => t.schema_version === 'ATIF-v1.4')).toBe(true);
    const layout = join(dir, 'from-atif.json');
    const exported = await intercode(['export', atif, '--format', 'intercode', '--out', layout, '--json']);
    expect(exported.code).toBe(0);
    const replay = await intercode(['replay', layout, '--env', 'bash', '--parallel', '2', '--json']);
    expect(replay.stderr).not.toMatch(/intercode: /);
    const report = JSON.parse(replay.stdout);
    const recorded = Object.values(JSON.parse(readFileSync(layout, 'utf8')) as Record<string, { turn_history: { rewards: number[] } }>);
    expect(report).toMatchObject({ episodes: 3, steps: recorded.reduce((n, e) => n + e.turn_history.rewards.length, 0), agreement: 1 });
    expect(report.successRate).toBe(report.recordedSuccessRate);
    expect(report.successRate).toBeCloseTo(2 / 3, 5);
  }, 300_000);
});
