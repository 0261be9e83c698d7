import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TrajectoryError } from '../../src/errors.js';
import { readRecordedTrajectories } from '../../src/trajectory/index.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'intercode-recorded-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function write(name: string, data: unknown): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, typeof data === 'string' ? data : JSON.stringify(data));
  return path;
}

/** An episode as InterCode's multi-turn script writes it. */
function episode(taskId: number, extra: Record<string, unknown> = {}, history: Record<string, unknown> = {}) {
  return {
    environment: 'ic_bash',
    dataset: 'nl2bash_fs_1.json',
    task_id: taskId,
    query: `query ${taskId}`,
    turn_history: {
      actions: ['ls', 'ls -a'],
      observations: ['a', '. .. a'],
      rewards: [0.34, 1],
      valid_action: [true, true],
      ...history,
    },
    summary: { max_reward: 1, max_reward_idx: 1, turns_taken: 2, turns_max: 10 },
    ...extra,
  };
}

describe('readRecordedTrajectories: layouts', () => {
  it('reads the keyed layout (multi-turn, ReAct), sorted by task index', async () => {
    const react = episode(10, {}, { thoughts: ['look', 'look closer'] });
    const file = await write('keyed.json', { '2': episode(2), '10': react, '0': episode(0) });
    const episodes = await readRecordedTrajectories(file);
    expect(episodes.map((e) => e.taskIndex)).toEqual([0, 2, 10]);
    expect(episodes[0]).toEqual({
      taskIndex: 0,
      query: 'query 0',
      actions: ['ls', 'ls -a'],
      observations: ['a', '. .. a'],
      rewards: [0.34, 1],
      validActions: [true, true],
      noCode: [false, false],
      blockedTurns: 0,
      maxReward: 1,
      raw: episode(0),
    });
    expect(episodes[2]!.raw).toEqual(react);
  });

  it('reads the meta-logs layout of plan-and-solve files', async () => {
    const plan = episode(5, {}, { steps: ['step 1'] });
    const file = await write('meta-logs.json', { meta: { env: 'bash', refine: true }, logs: { '5': plan } });
    const [only, ...rest] = await readRecordedTrajectories(file);
    expect(rest).toEqual([]);
    expect(only).toMatchObject({ taskIndex: 5, actions: ['ls', 'ls -a'], maxReward: 1 });
  });

  it('reads null validity flags (python) as true and keeps false', async () => {
    const file = await write('python.json', { '1': episode(1, {}, { valid_action: [null, false] }) });
    const [only] = await readRecordedTrajectories(file);
    expect(only!.validActions).toEqual([true, false]);
  });

  it('drops the lone submit reward of an episode without actions', async () => {
    const empty = episode(93, { summary: { max_reward: 0, max_reward_idx: -1 } }, {
      actions: [], observations: [], rewards: [0], valid_action: [false], steps: [],
    });
    const [only] = await readRecordedTrajectories(await write('no-actions.json', { '93': empty }));
    expect(only).toMatchObject({ actions: [], rewards: [], validActions: [], maxReward: 0 });
  });
});

describe('readRecordedTrajectories: PaLM, CTF and no-code turns', () => {
  /** An episode as InterCode's PaLM scripts wrote it when the API refused the second reply. */
  const palm = (history: Record<string, unknown> = {}) =>
    episode(7, { summary: { max_reward: 0.67, max_reward_idx: 0, turns_taken: 2, turns_max: 10 } }, {
      actions: ['ls', 'blocked'],
      observations: ['a'],
      rewards: [0.67, 0],
      valid_action: [true],
      ...history,
    });

  it('takes the final blocked action out of the lists and counts it', async () => {
    const [only] = await readRecordedTrajectories(await write('palm.json', { '7': palm() }));
    expect(only).toMatchObject({ actions: ['ls'], observations: ['a'], rewards: [0.67], validActions: [true], blockedTurns: 1, maxReward: 0.67 });
  });

  it('reads an episode blocked at its first turn as one without actions', async () => {
    const first = palm({ actions: ['blocked'], observations: [], rewards: [0], valid_action: [] });
    const [only] = await readRecordedTrajectories(await write('palm-first.json', { '7': first }));
    expect(only).toMatchObject({ actions: [], rewards: [], validActions: [], blockedTurns: 1 });
  });

  it('still refuses a blocked action that is not the last, or one with a reward', async () => {
    const middle = palm({ actions: ['blocked', 'ls'], observations: ['a'], rewards: [0, 0.67] });
    const error = await readRecordedTrajectories(await write('palm-middle.json', { '7': middle })).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/episode "7", field "turn_history.observations": has 1 entries but turn_history.actions has 2$/);
    const rewarded = palm({ rewards: [0.67, 0.5] });
    await expect(readRecordedTrajectories(await write('palm-reward.json', { '7': rewarded }))).rejects.toThrow(TrajectoryError);
  });

  it('reads a CTF log without valid_action as all valid', async () => {
    const ctf = episode(0, { environment: 'ic_ctf' }, { actions: ['ls', 'submit picoCTF{x}'], rewards: [0, 1], valid_action: undefined });
    const [only] = await readRecordedTrajectories(await write('ctf.json', { '0': ctf }));
    expect(only).toMatchObject({ validActions: [true, true], blockedTurns: 0 });
  });

  it('marks turns answered with a template retry message as without code', async () => {
    const retry = 'Format your BASH command as follows:\n```BASH\nYour BASH code here\n```\n';
    const sqlRetry = 'No SQL code was found in your last response.\n\nYour response should be a SQL command.';
    const file = await write('no-code.json', {
      '1': episode(1, {}, {
        actions: ['I think', 'USE flight_2;', 'ls', 'echo'],
        observations: [retry, sqlRetry, retry, 'Format your BASH command as follows:'],
        rewards: [0, 0, 0, 0.67],
        valid_action: [false, false, true, false],
      }),
    });
    const [only] = await readRecordedTrajectories(file);
    // a valid action, or one with a reward, ran: only the first two are replies without code
    expect(only!.noCode).toEqual([true, true, false, false]);
  });
});

describe('readRecordedTrajectories: errors', () => {
  const h = (history: Record<string, unknown>) => ({ '4': episode(4, {}, history) });
  const CASES: [string, unknown, string][] = [
    ['not-object.json', [1], ': must be an object keyed by task index, got an array'],
    ['empty.json', {}, ': the file holds no episodes'],
    ['bad-logs.json', { meta: {}, logs: [] }, ', field "logs": must be an object keyed by task index'],
    ['bad-key.json', { x: episode(0) }, ', episode "x": the key is not a task index (a non-negative integer)'],
    ['episode-type.json', { '0': 'oops' }, ', episode "0", field "episode": must be an object, got string'],
    ['no-query.json', { '3': { ...episode(3), query: undefined } }, ', episode "3", field "query": missing'],
    ['query-type.json', { '3': episode(3, { query: 7 }) }, ', episode "3", field "query": must be a string, got number'],
    ['no-history.json', { '3': episode(3, { turn_history: undefined }) }, ', episode "3", field "turn_history": missing'],
    ['no-actions.json', h({ actions: undefined }), ', episode "4", field "turn_history.actions": missing'],
    ['actions-type.json', h({ actions: 'ls' }), ', episode "4", field "turn_history.actions": must be an array, got string'],
    ['reward-type.json', h({ rewards: [0, '1'] }),
      ', episode "4", field "turn_history.rewards": entry 2 must be a number, got string'],
    ['flag-type.json', h({ valid_action: [true, 1] }),
      ', episode "4", field "turn_history.valid_action": entry 2 must be true, false or null, got number'],
    ['length.json', h({ observations: ['a'] }),
      ', episode "4", field "turn_history.observations": has 1 entries but turn_history.actions has 2'],
    ['no-summary.json', { '3': episode(3, { summary: undefined }) }, ', episode "3", field "summary": missing'],
    ['max-reward.json', { '3': episode(3, { summary: { max_reward: null } }) },
      ', episode "3", field "summary.max_reward": must be a number, got null'],
    ['malformed.json', '{\n "0": {,}\n}', ', line 2: malformed JSON (column 8): Expected property name or \'}\''],
  ];

  it.each(CASES)('%s', async (name, data, expected) => {
    const file = await write(name, data);
    const error = await readRecordedTrajectories(file).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TrajectoryError);
    expect((error as TrajectoryError).message).toBe(`${file}${expected}`);
    expect((error as TrajectoryError).code).toBe('TRAJECTORY_INVALID');
  });

  it('reports a missing file', async () => {
    const file = join(dir, 'missing.json');
    await expect(readRecordedTrajectories(file)).rejects.toThrow(`${file}: cannot read the file (ENOENT)`);
  });

  it('keeps the episode key and field as structured details', async () => {
    const file = await write('details.json', h({ rewards: [1] }));
    const error = (await readRecordedTrajectories(file).catch((e: unknown) => e)) as TrajectoryError;
    expect(error.location).toEqual({ file, episode: '4', field: 'turn_history.rewards' });
  });
});
