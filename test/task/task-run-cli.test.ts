/**
 * `intercode run task` (the CLI, as a child process from source, in Docker) over a dataset of
 * the failing fixtures (a reward that is not a number, no reward file, a verifier past its
 * time limit) and one task that scores 1: each unscorable episode is shown as not scored with
 * its reason — never as reward 0 — in the text and the --json output, is left out of the mean
 * reward, and the summary counts them by reason; `collect --policy gold` likewise, its
 * demonstrations saying why each was cut off; `play` says so with the reason. And a task that asks for the network in
 * schema 1.1's syntax (`network_mode = "public"`, `[environment.network] mode = "public"`) is
 * refused naming its task.toml and the key, and runs offline with --internet-tasks-offline; a
 * key of [environment] that is not read is reported with its file.
 */
import { cp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-path.js';
import { parseDemos } from '../../training/demos/demo-episode.js';
import { makeTempDir } from '../datasets/tmp-files.js';
import { intercodeFromSource, intercodeWithStdin } from '../setup/cli.js';
import { dockerTestFile, skipWithoutEngine } from '../setup/docker.js';

const { engine } = await dockerTestFile();
const FIXTURES = packagePath('test', 'fixtures', 'harbor-tasks');

interface RunJson {
  episodes: number;
  solved: number;
  meanReward: number | null;
  notScored: number;
  notScoredByReason: Record<string, number>;
  tasks: { index: number; reward: number | null; parts: Record<string, number>; truncation?: { reason: string; message: string } }[];
}

describe.skipIf(skipWithoutEngine(engine, 'intercode run task'))('intercode run task: unscorable episodes', () => {
  let data: string;
  let cleanupData: () => Promise<void>;

  beforeAll(async () => {
    const temp = await makeTempDir();
    data = temp.dir;
    cleanupData = temp.remove;
    // Sorted by name: 0 bad-reward, 1 hello-txt (scores 1), 2 no-reward, 3 slow-verifier.
    for (const name of ['bad-reward', 'no-reward', 'slow-verifier']) await cp(join(FIXTURES, 'failing', name), join(data, name), { recursive: true });
    await cp(join(FIXTURES, 'own', 'hello-txt'), join(data, 'hello-txt'), { recursive: true });
  });
  afterAll(async () => {
    await cleanupData?.();
  });

  it('prints each not-scored episode with its reason, and a mean of the scored ones only', async () => {
    const { code, stdout, stderr } = await intercodeFromSource(['run', 'task', '--data', data, '--keep-warm', '0']);
    expect(code, stderr).toBe(0);
    expect(stdout).toMatch(/^# {2}0 {2}not scored: reward-invalid — .*"passed\\n"/m);
    expect(stdout).toMatch(/^# {2}1 {2}reward 1\.00 {2}reward=1\.00 {2}/m);
    expect(stdout).toMatch(/^# {2}2 {2}not scored: reward-missing — /m);
    expect(stdout).toMatch(/^# {2}3 {2}not scored: verifier-timeout — /m);
    expect(stdout).not.toMatch(/reward 0\.00/);
    expect(stdout).toContain('4 episodes, 1 scored 1.0 (25.0 %), 3 not scored (reward-invalid 1, reward-missing 1, verifier-timeout 1), mean reward 1.000 of the 1 scored, ');
  }, 300_000);

  it('--json: reward null with the truncation reason and message; the mean leaves them out', async () => {
    const { code, stdout, stderr } = await intercodeFromSource(['run', 'task', '--data', data, '--keep-warm', '0', '--json']);
    expect(code, stderr).toBe(0);
    const run = JSON.parse(stdout) as RunJson;
    expect(run).toMatchObject({ episodes: 4, solved: 1, meanReward: 1, notScored: 3, notScoredByReason: { 'reward-invalid': 1, 'reward-missing': 1, 'verifier-timeout': 1 } });
    expect(run.tasks.map((t) => [t.index, t.reward, t.truncation?.reason])).toEqual([
      [0, null, 'reward-invalid'],
      [1, 1, undefined],
      [2, null, 'reward-missing'],
      [3, null, 'verifier-timeout'],
    ]);
    expect(run.tasks[0]!.truncation!.message).toContain('"passed\\n"');
    expect(run.tasks[1]).toEqual({ index: 1, reward: 1, parts: { reward: 1 } });
  }, 300_000);

  it('collect --policy gold: the summary leaves them out of the mean and counts them; each demonstration says why it was cut off', async () => {
    const out = join(data, 'demos.jsonl');
    const { code, stdout, stderr } = await intercodeFromSource(['collect', '--env', 'task', '--data', data, '--policy', 'gold', '--out', out, '--keep-warm', '0', '--json']);
    expect(code, stderr).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ episodes: 4, solved: 1, meanReward: 1, notScored: 3, notScoredByReason: { 'reward-invalid': 1, 'reward-missing': 1, 'verifier-timeout': 1 } });
    const demos = parseDemos(await readFile(out, 'utf8'), out);
    expect(Object.fromEntries(demos.map((d) => [d.task_id, [d.reward, d.truncated, d.truncation?.split(':')[0]]]))).toEqual({
      'bad-reward': [0, true, 'reward-invalid'],
      'hello-txt': [1, false, undefined],
      'no-reward': [0, true, 'reward-missing'],
      'slow-verifier': [0, true, 'verifier-timeout'],
    });
  }, 300_000);
});

describe.skipIf(skipWithoutEngine(engine, 'intercode play task'))('intercode play task: an episode its verifier cannot score', () => {
  it('says it was not scored, with the reason and message', async () => {
    const run = await intercodeWithStdin(['play', 'task', '--data', join(FIXTURES, 'failing', 'no-reward')], 'touch /app/done\nsubmit\n');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('episode truncated, not scored: reward-missing — the verifier wrote neither /logs/verifier/reward.txt nor reward.json (it exited with 0)');
    expect(run.stdout).not.toMatch(/reward 0\.00/);
  }, 300_000);
});

describe.skipIf(skipWithoutEngine(engine, 'intercode run task: network asks'))('intercode run task: a task that asks for the network', () => {
  const cases = [
    ['network-mode', 'public-mode', 'environment.network_mode = "public"'],
    ['network-table', 'public-table', 'environment.network.mode = "public"'],
  ] as const;
  for (const [dataset, folder, key] of cases) {
    it(`${key}: refused naming the file and key; run offline with --internet-tasks-offline`, async () => {
      const data = join(FIXTURES, 'refused', dataset);
      const refused = await intercodeFromSource(['run', 'task', '--data', data, '--keep-warm', '0']);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain(`${join(data, folder, 'task.toml')} (${key})`);
      expect(refused.stderr).toContain('--internet-tasks-offline');
      // A key of [environment] we do not read is reported, not silently dropped (public-mode has gpus = 0).
      if (folder === 'public-mode') expect(refused.stderr).toContain(`${join(data, folder, 'task.toml')}: environment.gpus is not read here (ignored)`);
      const offline = await intercodeFromSource(['run', 'task', '--data', data, '--keep-warm', '0', '--internet-tasks-offline', '--allow-failing-golds', '--json']);
      expect(offline.code, offline.stderr).toBe(0);
      // Scored, and 0: the solution could resolve nothing without a network.
      expect((JSON.parse(offline.stdout) as RunJson).tasks).toEqual([{ index: 0, reward: 0, parts: { reward: 0 } }]);
    }, 300_000);
  }
});
