import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TrajectoryError } from '../../src/errors.js';
import { toIntercodeLog, writeEpisodeLog, type EpisodeLog } from '../../src/trajectory/index.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'intercode-logs-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const NOW = new Date(Date.UTC(2024, 4, 31, 12, 34, 56, 789));

function sampleLog(): EpisodeLog {
  return toIntercodeLog({
    environment: 'ic_bash',
    task: { index: 3, query: 'Count the files', gold: 'ls | wc -l' },
    steps: [
      { action: 'ls', observation: 'a\nb\n' },
      { action: 'ls | wc -l', observation: '2\n' },
    ],
    reward: 1,
    info: { turns: 2 },
  });
}

describe('toIntercodeLog', () => {
  it("builds InterCode's log object with its field names", () => {
    expect(sampleLog()).toEqual({
      environment: 'ic_bash',
      query_idx: 3,
      query: 'Count the files',
      gold: 'ls | wc -l',
      reward: 1,
      trajectory: [
        { action: 'ls', observation: 'a\nb\n' },
        { action: 'ls | wc -l', observation: '2\n' },
      ],
      info: { turns: 2 },
    });
  });

  type Change = { environment?: string; index?: number; reward?: number };
  it.each<[Change, string]>([
    [{ environment: '../x' }, '<episode log>, field "environment": must be letters, digits, ".", "_" or "-", got "../x"'],
    [{ index: -1 }, '<episode log>, field "query_idx": must be a non-negative integer, got -1'],
    [{ reward: Number.NaN }, '<episode log>, field "reward": must be null or a finite number, got NaN'],
  ])('rejects %o', (change, message) => {
    const episode = {
      environment: change.environment ?? 'ic_bash',
      task: { index: change.index ?? 0, query: 'q', gold: 'g' },
      steps: [],
      reward: change.reward ?? null,
    };
    expect(() => toIntercodeLog(episode)).toThrow(TrajectoryError);
    expect(() => toIntercodeLog(episode)).toThrow(message);
  });
});

describe('writeEpisodeLog', () => {
  it('writes <environment>-<query_idx>-<timestamp>.json and never overwrites', async () => {
    const first = await writeEpisodeLog(dir, sampleLog(), { now: NOW });
    const second = await writeEpisodeLog(dir, sampleLog(), { now: NOW });
    expect(first).toBe(join(dir, 'ic_bash-3-20240531T123456789Z.json'));
    expect(second).toBe(join(dir, 'ic_bash-3-20240531T123456789Z-1.json'));
    expect(JSON.parse(await readFile(first, 'utf8'))).toEqual(sampleLog());
    expect(await readFile(first, 'utf8')).toBe(`${JSON.stringify(sampleLog(), null, 2)}\n`);
    const names = await readdir(dir);
    expect(names.filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it('creates the folder and keeps a null reward', async () => {
    const log = { ...sampleLog(), reward: null };
    const path = await writeEpisodeLog(join(dir, 'nested', 'logs'), log, { now: NOW });
    expect(JSON.parse(await readFile(path, 'utf8')).reward).toBeNull();
  });

  it('reports info that is not JSON', async () => {
    const log = { ...sampleLog(), info: { big: 1n } };
    await expect(writeEpisodeLog(dir, log)).rejects.toThrow(`${dir}, field "info": cannot be written as JSON`);
  });

  it('reports a folder that cannot be made, leaving nothing behind', async () => {
    const blocker = join(dir, 'a-file');
    await writeFile(blocker, '');
    const error = await writeEpisodeLog(join(blocker, 'logs'), sampleLog()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TrajectoryError);
    expect((error as TrajectoryError).message).toBe(`${join(blocker, 'logs')}: cannot write the episode log (ENOTDIR)`);
  });
});
