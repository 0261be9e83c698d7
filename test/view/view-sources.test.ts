/**
 * The viewer reads what the project writes: every format from the project's own writers
 * (test/view/project-runs.ts) is found, paged, filtered and read back episode by episode.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { discoverRuns, JsonLinesSource, readLines, type Catalogue, type EpisodeSource } from '../../src/view/index.js';
import type { RolloutRecord } from '../../src/rollouts/index.js';
import { tempDir } from '../setup/temp-dirs.js';
import { makeProjectRuns, TASKS, type ProjectRuns } from './project-runs.js';

let root: string;
let runs: ProjectRuns;
let catalogue: Catalogue;

beforeAll(async () => {
  root = tempDir('ic-view-sources-');
  runs = await makeProjectRuns(root);
  catalogue = await discoverRuns([root], root);
}, 60_000);

const sourceAt = (path: string): EpisodeSource => {
  const found = catalogue.sources.find((s) => s.path === path);
  if (!found) throw new Error(`no source for ${path}: ${catalogue.sources.map((s) => s.path).join(', ')}`);
  return found;
};

async function all(source: EpisodeSource, size = 2) {
  const entries = [];
  for (let cursor: string | null = null; ; ) {
    const page = await source.page(cursor, {}, size);
    expect(page.problems).toEqual([]);
    entries.push(...page.entries);
    if (page.next === null) return entries;
    cursor = page.next;
  }
}

describe('discovery', () => {
  it('finds every file and folder the writers made, with what wrote it, and the run settings', () => {
    const titles = catalogue.sources.map((s) => s.title).sort();
    expect(titles).toEqual([
      'ATIF trajectories (collect --format atif): rollouts-atif.jsonl',
      'Hugging Face messages (collect --format hf-messages): rollouts-hf-messages.jsonl',
      'InterCode episode logs (--trajectories): trajectories/',
      'InterCode result log: ic_bash_try-again_recorded_4_turns.json',
      // The mock model's recording is in InterCode's log layout too.
      'InterCode result log: recording.json',
      'demonstrations (collect): demos.jsonl',
      'eval episodes: episodes.jsonl',
      'rollout records (collect --format jsonl): rollouts-jsonl.jsonl',
    ]);
    const evalRun = catalogue.runs.find((r) => r.dir === runs.evalDir)!;
    expect(evalRun.settings).toEqual({ env: 'bash', strategy: 'try-again', turns: 4 });
    expect(evalRun.sources).toHaveLength(2);
    expect(catalogue.skipped).toEqual([]);
  });

  it('names a missing path and a file that holds no episodes', async () => {
    await writeFile(join(root, 'notes.txt'), 'hello');
    await writeFile(join(root, 'other.jsonl'), '{"a":1}\n');
    const found = await discoverRuns([join(root, 'nope'), join(root, 'notes.txt'), join(root, 'other.jsonl')], root);
    expect(found.skipped).toEqual([
      { path: join(root, 'nope'), reason: 'does not exist' },
      { path: join(root, 'notes.txt'), reason: 'not a file this project writes runs to' },
      { path: join(root, 'other.jsonl'), reason: 'its first lines are no episode of a format this project writes' },
    ]);
  });
});

describe('each format read back', () => {
  it('eval: the journal and the InterCode result log hold the same episodes, turn by turn', async () => {
    const journal = await all(sourceAt(join(runs.evalDir, 'episodes.jsonl')));
    const log = await all(sourceAt(join(runs.evalDir, 'ic_bash_try-again_recorded_4_turns.json')));
    const byTask = (list: typeof journal) => list.map((e) => e.episode).sort((a, b) => a.taskId.localeCompare(b.taskId));
    expect(byTask(journal)).toEqual(byTask(log));
    const lines = (await readFile(join(runs.evalDir, 'episodes.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
    for (const line of lines) {
      const e = byTask(journal).find((x) => x.taskIndex === line.task_id)!;
      expect(e.turns.map((t) => t.action)).toEqual(line.turn_history.actions);
      expect(e.turns.map((t) => t.observation)).toEqual(line.turn_history.observations);
      expect(e.turns.map((t) => t.reward)).toEqual(line.turn_history.rewards);
      expect(e.turns.map((t) => t.valid)).toEqual(line.turn_history.valid_action);
      expect(e.reward).toBe(line.summary.max_reward);
      expect(e.env).toBe('bash');
    }
    const t0 = byTask(journal)[0]!;
    expect(t0).toMatchObject({ taskId: '0', query: TASKS[0]!.query, solved: true, truncated: false, ended: 'solved (the episode stops at reward 1)' });
    expect(t0.parts).toEqual({ gold_match: 1 });
    expect(byTask(journal)[1]!.ended).toBe('turn limit 4 reached');
  });

  it('collect: rollout records, hf-messages and ATIF give the same episodes, groups and tokens', async () => {
    const records = (await readFile(runs.rollouts.jsonl, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as RolloutRecord);
    const views = await Promise.all((['jsonl', 'hf-messages', 'atif'] as const).map((f) => all(sourceAt(runs.rollouts[f]))));
    for (const entries of views) {
      expect(entries).toHaveLength(9);
      entries.forEach(({ episode: e }, i) => {
        const r = records[i]!;
        expect(e.taskId).toBe(r.task_id);
        expect(e.turns.map((t) => t.action)).toEqual(r.actions);
        expect(e.turns.map((t) => t.observation)).toEqual(r.observations);
        expect(e.turns.map((t) => t.reward)).toEqual(r.rewards);
        expect(e.reward).toBe(r.reward);
        expect(e.parts).toEqual(r.reward_components);
        expect(e.group).toEqual({ id: r.task_id, sample: r.sample.index, size: 3 });
        expect(e.truncated).toBe(r.truncated);
        expect(e.model).toBe('recorded');
      });
    }
    const [recordView, , atifView] = views;
    // Token counts of each model turn, from the record's tokens (ATIF: the agent step's metrics).
    for (const entries of [recordView!, atifView!]) {
      const turn = entries[0]!.episode.turns[0]!;
      expect(turn.tokens).toMatchObject({ ids: true, logprobs: true });
      expect(turn.tokens!.prompt).toBe(records[0]!.tokens.turns[0]!.prompt_tokens);
    }
  });

  it('collect demonstrations and --trajectories logs: turns, reward, gold and its output', async () => {
    const demos = await all(sourceAt(runs.demos));
    expect(demos.map((d) => [d.episode.taskId, d.episode.turns.map((t) => t.action), d.episode.reward, d.episode.policy])).toEqual(TASKS.map((t) => [t.id, [t.gold, 'submit'], 1, 'gold']));
    const logs = await all(sourceAt(runs.trajectoriesDir));
    expect(logs).toHaveLength(3);
    const first = logs.find((l) => l.episode.taskId === '1')!.episode;
    expect(first).toMatchObject({ format: 'intercode-log', env: 'bash', gold: 'date', goldOutput: 'gold printed for 1', reward: 1, solved: true, ended: 'submitted and scored' });
    expect(first.turns).toEqual([expect.objectContaining({ action: 'date', observation: 'ran date' })]);
  });
});

describe('paging and filters', () => {
  it('pages by byte offsets: every episode once, in file order, whatever the page size', async () => {
    const source = sourceAt(runs.rollouts.jsonl);
    const whole = await all(source, 100);
    for (const size of [1, 2, 4]) expect((await all(source, size)).map((e) => e.ref)).toEqual(whole.map((e) => e.ref));
    const lines = (await readLines(runs.rollouts.jsonl, 0, { lines: 100 })).lines;
    expect(whole.map((e) => Number(e.ref))).toEqual(lines.map((l) => l.offset));
  });

  it('filters by outcome, env and task; the figures count the same', async () => {
    const source = sourceAt(runs.rollouts.jsonl);
    const records = (await readFile(runs.rollouts.jsonl, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as RolloutRecord);
    const solved = (await source.page(null, { outcome: 'solved' }, 100)).entries;
    const failed = (await source.page(null, { outcome: 'failed' }, 100)).entries;
    const truncated = (await source.page(null, { outcome: 'truncated' }, 100)).entries;
    expect(solved.length).toBe(records.filter((r) => r.reward === 1).length);
    expect(solved.length + failed.length).toBe(9);
    expect(truncated.length).toBe(records.filter((r) => r.truncated).length);
    expect((await source.page(null, { task: '2' }, 100)).entries.map((e) => e.episode.taskId)).toEqual(['2', '2', '2']);
    expect((await source.page(null, { env: 'sql' }, 100)).entries).toEqual([]);
    const figures = (await source.counted()).figures;
    expect(figures).toMatchObject({ episodes: 9, solved: solved.length, truncated: truncated.length, envs: ['bash'], unreadable: 0 });
    expect(figures.meanReward).toBeCloseTo(records.reduce((a, r) => a + r.reward, 0) / 9, 9);
  });

  it('a group is its samples, side by side, from any of them', async () => {
    const source = sourceAt(runs.rollouts['hf-messages']);
    const entries = await all(source, 100);
    const last = entries.filter((e) => e.episode.taskId === '1').at(-1)!;
    const group = await source.group(last.ref);
    expect(group.map((g) => [g.episode.taskId, g.episode.group!.sample])).toEqual([['1', 0], ['1', 1], ['1', 2]]);
  });

  it('refuses a place that is not a line start, and names the file', async () => {
    const source = new JsonLinesSource(runs.rollouts.jsonl, 'x');
    await expect(source.episode('5')).rejects.toThrow(`${runs.rollouts.jsonl}: byte 5 is not the start of a line`);
    await expect(source.episode('abc')).rejects.toThrow('is not an episode\'s place');
  });
});
