/**
 * `intercode collect --branch-at STEP --branches K` end to end, over real HTTP (the recorded
 * model) and real bash sandboxes: sample 0 plays each task's prefix once, the env's episode is
 * forked at the first model request after step STEP, and every branch goes on from the
 * prefix's files and cwd (its next action reads a file the prefix wrote, from the cwd the prefix
 * entered). The records say so: a group id, the prefix's session and lengths; the prefix's
 * token data is written once (in sample 0). A task that ends before the branch point is played
 * as plain samples (`branch` null).
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILTIN_BASH_TASKS } from '../../envs/bash/index.js';
import { recordedEnvFence } from '../../envs/index.js';
import { RecordedModel, startMockServer, type MockServer } from '../../src/mock-llm/index.js';
import { intercodeFromSource as intercode } from '../setup/cli.js';
import { dockerTestFile, gvisorGap, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { recordedBashEpisode } from '../setup/recorded-model.js';

const { engine } = await dockerTestFile();
const lines = (file: string) => readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));

describe.skipIf(skipWithoutEngine(engine, 'collect --branch-at') || gvisorGap('forks read the writable layer on the host: overlay2 and runc only'))('collect --branch-at STEP --branches K', () => {
  let dir: string;
  let server: MockServer;
  const K = 4;

  beforeAll(async () => {
    requireEngine(engine);
    dir = await mkdtemp(join(tmpdir(), 'intercode-collect-branch-'));
    const tasks = JSON.parse(readFileSync(BUILTIN_BASH_TASKS, 'utf8')) as { query: string; gold: string }[];
    // Task 0: two prefix steps (a file written, a cd), then a read of that file from there, then the gold (the recorded model repeats it to the turn limit).
    // Task 1: a wrong command, then the gold: solved at step 2, so no model request comes after it.
    await writeFile(
      join(dir, 'recording.json'),
      JSON.stringify({ 0: recordedBashEpisode(tasks[0]!.query, ['echo prefix-wrote-this > /tmp/branch-mark', 'cd /tmp', 'cat branch-mark', tasks[0]!.gold]), 1: recordedBashEpisode(tasks[1]!.query, ['ls /no-such-dir', tasks[1]!.gold]) }),
    );
    server = await startMockServer(await RecordedModel.load(join(dir, 'recording.json'), recordedEnvFence), 0);
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('branches each group at step 2: the prefix is played once, every branch continues its files and cwd, and the prefix tokens are written once', async () => {
    const out = join(dir, 'branched.jsonl');
    const run = await intercode([
      'collect', '--env', 'bash', '--policy', 'llm:recorded', '--base-url', server.baseUrl, '--strategy', 'tools', '--branch-at', '2', '--branches', String(K),
      '--limit', '2', '--turn-limit', '6', '--tokens', 'ids', '--out', out, '--parallel', '2', '--json',
    ]);
    expect(run.stderr).not.toMatch(/intercode: /);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ episodes: 2 * K, written: 2 * K, groups: 2, branchedGroups: 1, solved: K });
    expect(run.stderr).toMatch(/task 1: not branched/);
    const records = lines(out);
    const group = (id: string) => records.filter((r) => r.task_id === id).sort((a, b) => a.sample.index - b.sample.index);

    const branched = group('0');
    expect(branched).toHaveLength(K);
    const [first, ...branches] = branched;
    for (const r of branched) {
      expect(r.branch).toMatchObject({ group_id: '0', prefix_session_id: first.session_id, prefix_steps: 2, prefix_turns: 2, prefix_model_turns: 2 });
      expect(r.actions.slice(0, 3)).toEqual(['echo prefix-wrote-this > /tmp/branch-mark', 'cd /tmp', 'cat branch-mark']);
      // Step 3 ran in each branch's own forked sandbox: the prefix's file, read from the prefix's cwd.
      expect(r.observations[2]).toBe('prefix-wrote-this\n');
      // The gold then runs; the file the prefix left costs part of the reward, the same in every sample (sample 0's too).
      expect(r.actions[3]).toBe(first.actions[3]);
      expect(r.reward).toBe(first.reward);
      expect(r.group.size).toBe(K);
    }
    expect(first.reward).toBeGreaterThan(0);
    expect(new Set(branched.map((r) => r.sample.seed)).size).toBe(K);
    expect(first.branch.prefix_tokens).toBeNull();
    expect(first.tokens.turns).toHaveLength(first.turn_messages.length);
    for (const r of branches) {
      // The prefix's two model turns and its first prefix_tokens ids are in sample 0's record only.
      expect(r.tokens.turns).toHaveLength(first.tokens.turns.length - 2);
      expect(r.branch.prefix_tokens).toBeGreaterThan(0);
      expect(first.tokens.episode.token_ids.slice(0, r.branch.prefix_tokens).concat(r.tokens.episode.token_ids)).toEqual(first.tokens.episode.token_ids);
      expect(r.tokens.episode.loss_mask).toHaveLength(r.tokens.episode.token_ids.length);
    }

    const plain = group('1');
    expect(plain).toHaveLength(K);
    for (const r of plain) {
      expect(r.branch).toBeNull();
      expect(r.reward).toBe(1);
      expect(r.tokens.turns).toHaveLength(2);
    }
  }, 600_000);

  it('refuses --branches without --branch-at, with --samples-per-task, fewer than 2, and a format other than jsonl', async () => {
    const base = ['collect', '--env', 'bash', '--policy', 'llm:recorded', '--base-url', 'http://127.0.0.1:9/v1', '--out', join(dir, 'x.jsonl')];
    expect((await intercode([...base, '--branches', '4'])).stderr).toMatch(/--branches.*needs --branch-at/);
    expect((await intercode([...base, '--branch-at', '2', '--branches', '4', '--samples-per-task', '4'])).stderr).toMatch(/--samples-per-task/);
    expect((await intercode([...base, '--branch-at', '2', '--branches', '1'])).stderr).toMatch(/--branches.*at least 2/);
    expect((await intercode([...base, '--branch-at', '2', '--branches', '4', '--format', 'hf-messages'])).stderr).toMatch(/--format.*jsonl/);
  }, 120_000);
});
