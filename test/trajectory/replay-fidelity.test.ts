import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TrajectoryError } from '../../src/errors.js';
import { replayTrajectories } from '../../src/replay/replay.js';
import { QueryMismatchError } from '../../src/replay/task-match.js';
import { readRecordedTrajectories } from '../../src/trajectory/index.js';
import type { Task } from '../../src/datasets/index.js';
import { FakeEnv, task } from '../eval/fake-env.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'intercode-replay-fidelity-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function write(name: string, data: unknown): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, JSON.stringify(data));
  return path;
}

const TASKS = [task(0, 'first query', 'echo one'), task(1, 'second query', 'echo two'), task(2, 'third query', 'echo three')];

/** An every-step episode in InterCode's multi-turn layout; FakeEnv scores 1 for the gold, 0.5 when it contains it. */
function episode(index: number, query: string, turns: [action: string, observation: string | undefined, reward: number, valid?: boolean][]) {
  const shown = turns.filter(([, obs]) => obs !== undefined);
  return {
    environment: 'ic_bash',
    task_id: index,
    query,
    turn_history: {
      actions: turns.map(([a]) => a),
      observations: shown.map(([, o]) => o),
      rewards: turns.map(([, , r]) => r),
      valid_action: shown.map(([, , , v]) => v ?? true),
    },
    summary: { max_reward: Math.max(...turns.map(([, , r]) => r)), turns_taken: turns.length },
  };
}

const RETRY = 'Format your BASH command as follows:\n```BASH\nYour BASH code here\n```\n';

describe('replay of PaLM-layout logs', () => {
  it('does not execute a blocked turn or a reply without code, and counts them apart from the steps', async () => {
    const file = await write('palm.json', {
      '0': episode(0, 'first query', [
        ['echo one and more', 'ran', 0.5],
        // InterCode did not run this reply; had we run it, FakeEnv would score it 1 and disagree with the recorded 0
        ['echo one', RETRY, 0, false],
        ['blocked', undefined, 0],
      ]),
      '1': episode(1, 'second query', [['echo two', 'ran', 1]]),
    });
    const episodes = await readRecordedTrajectories(file);
    const env = new FakeEnv(TASKS);
    const report = await replayTrajectories({ protocol: 'every-step', envs: [env], tasks: TASKS, episodes, file });
    expect(report).toMatchObject({ episodes: 2, steps: 2, agreeingSteps: 2, notExecuted: { noCode: 1, blocked: 1 }, queryMismatches: [] });
    expect(report.successRate).toBe(0.5);
    expect(report.recordedSuccessRate).toBe(0.5);
  });
});

describe('recorded queries that differ from the data file', () => {
  let file: string;
  beforeAll(async () => {
    file = await write('older-task-file.json', {
      '0': episode(0, 'first query', [['echo one', 'ran', 1]]),
      // recorded against an older task file: same gold, other wording
      '1': episode(1, 'the second query, as it was', [['echo two', 'ran', 1]]),
      '2': episode(2, 'first query', [['echo three', 'ran', 1]]),
      '7': episode(7, 'a task the data file does not have', [['ls', 'ran', 0]]),
    });
  });

  it('fail: stops before any episode runs, naming every episode in one line', async () => {
    const env = new FakeEnv(TASKS);
    const episodes = await readRecordedTrajectories(file);
    const error = await replayTrajectories({ protocol: 'every-step', envs: [env], tasks: TASKS, episodes, file }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QueryMismatchError);
    expect(error).toBeInstanceOf(TrajectoryError);
    const message = (error as Error).message;
    expect(message).not.toContain('\n');
    expect(message).toBe(
      `${file}, field "query": 3 recorded episodes not matching the data file: ` +
        'episode 1 recorded "the second query, as it was", data file "second query"; ' +
        'episode 2 recorded "first query", data file "third query" (the data file has the recorded query at index 0); ' +
        'episode 7 has no task at that index in the data file. ' +
        "Replay them against the data file's tasks with --on-query-mismatch trust-recording, or leave them out with --on-query-mismatch skip",
    );
    expect((error as QueryMismatchError).mismatches.map((m) => m.taskIndex)).toEqual([1, 2, 7]);
    expect(env.resets).toEqual([]);
  });

  it('skip: replays only the matching episodes and lists the others', async () => {
    const env = new FakeEnv(TASKS);
    const episodes = await readRecordedTrajectories(file);
    const report = await replayTrajectories({ protocol: 'every-step', envs: [env], tasks: TASKS, episodes, file, onQueryMismatch: 'skip' });
    expect(env.resets).toEqual([0]);
    expect(report).toMatchObject({ episodes: 1, steps: 1, agreeingSteps: 1 });
    expect(report.queryMismatches.map((m) => [m.taskIndex, m.handling])).toEqual([[1, 'skipped'], [2, 'skipped'], [7, 'skipped']]);
  });

  it('trust-recording: replays them against the data file task at the recorded index; an index without a task is still left out', async () => {
    const env = new FakeEnv(TASKS);
    const episodes = await readRecordedTrajectories(file);
    const report = await replayTrajectories({ protocol: 'every-step', envs: [env], tasks: TASKS, episodes, file, onQueryMismatch: 'trust-recording' });
    expect(env.resets).toEqual([0, 1, 2]);
    expect(report).toMatchObject({ episodes: 3, steps: 3, agreeingSteps: 3 });
    expect(report.queryMismatches).toEqual([
      { taskIndex: 1, recordedQuery: 'the second query, as it was', dataQuery: 'second query', foundAt: null, handling: 'trusted' },
      { taskIndex: 2, recordedQuery: 'first query', dataQuery: 'third query', foundAt: 0, handling: 'trusted' },
      { taskIndex: 7, recordedQuery: 'a task the data file does not have', dataQuery: null, foundAt: null, handling: 'skipped' },
    ]);
  });
});

/** A CTF-like env: `submit X` scores 1 when X is the gold flag (the episode goes on after a wrong one); other actions echo. */
class FlagEnv extends FakeEnv {
  readonly commands: string[] = [];
  private gold = '';
  override async reset(options: { task?: number | Task } = {}) {
    const result = await super.reset(options);
    this.gold = String((result.info.task as Task).gold);
    return result;
  }
  override async step(action: string) {
    const flag = /^submit\s+(.*)$/.exec(action.trim())?.[1];
    if (flag === undefined) {
      this.commands.push(action);
      return super.step(action);
    }
    const reward = flag.trim() === this.gold ? 1 : 0;
    const score = { reward, parts: { flag: reward }, details: {} };
    return { observation: reward ? 'The submitted flag is correct.' : 'Submitted flag is incorrect. Keep trying!', reward, terminated: reward === 1, truncated: false, info: { actionExecuted: true, exitCode: 0, durationMs: 0, events: [], score } };
  }
}

describe('replay of the GPT-4 CTF logs (InterCode\'s first CTF env)', () => {
  const FLAGS = [task(0, 'find the flag', 'picoCTF{a}')];
  const ctf = (actions: string[], rewards: number[]) => ({
    environment: 'ic_ctf',
    query: 'find the flag',
    // no valid_action: that script did not record it
    turn_history: { actions, observations: actions.map(() => ''), rewards },
    summary: { max_reward: Math.max(...rewards), num_submissions: rewards.filter((r) => r !== 0).length },
  });

  it('runs `cmd <command>` actions as the command, and compares a wrong flag as -1 where the file scored it so', async () => {
    const file = await write('ctf-25-turns.json', {
      '0': ctf(['cmd /bin/bash -c "cat flag.txt"', 'submit picoCTF{b}', 'submit picoCTF{a}'], [0, -1, 1]),
    });
    const episodes = await readRecordedTrajectories(file);
    const env = new FlagEnv(FLAGS);
    const report = await replayTrajectories({ protocol: 'on-flag', envs: [env], tasks: FLAGS, episodes, file });
    expect(env.commands).toEqual(['/bin/bash -c "cat flag.txt"']);
    expect(report).toMatchObject({ episodes: 1, steps: 3, agreeingSteps: 3, successRate: 1, recordedSuccessRate: 1 });
  });

  it('keeps a wrong flag at 0 in files that scored it 0', async () => {
    const file = await write('ctf-10-turns.json', { '0': ctf(['ls', 'submit picoCTF{b}', 'submit picoCTF{a}'], [0, 0, 1]) });
    const episodes = await readRecordedTrajectories(file);
    const env = new FlagEnv(FLAGS);
    const report = await replayTrajectories({ protocol: 'on-flag', envs: [env], tasks: FLAGS, episodes, file });
    expect(env.commands).toEqual(['ls']);
    expect(report).toMatchObject({ steps: 3, agreeingSteps: 3 });
  });
});
