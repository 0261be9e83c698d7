import { appendFileSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, TrajectoryError } from '../../src/errors.js';
import { RolloutFile } from '../../src/rollouts/index.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'intercode-rollout-file-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const settings = { env: 'bash', model: 'm', samplesPerTask: 2 };
const line = (task: string, k: number) => JSON.stringify({ task_id: task, sample_index: k });
const atifLine = (task: string, k: number) => JSON.stringify({ schema_version: 'ATIF-v1.4', extra: { task_id: task, sample: { index: k } } });

describe('RolloutFile (collect --policy llm resumes)', () => {
  it('keeps complete groups, drops a torn last line and a group written in part, and refuses other settings', () => {
    const path = join(dir, 'r.jsonl');
    const first = RolloutFile.open(path, settings, 2);
    expect(first.done.size).toBe(0);
    first.append([line('0', 0), line('0', 1)]);
    first.append([line('1', 0), line('1', 1)]);
    appendFileSync(path, `${line('2', 0)}\n{"task_id":"2","sam`);
    const again = RolloutFile.open(path, settings, 2);
    expect([...again.done]).toEqual(['0', '1']);
    expect(again.resumed).toBe(4);
    expect(readFileSync(path, 'utf8')).toBe([line('0', 0), line('0', 1), line('1', 0), line('1', 1)].map((l) => `${l}\n`).join(''));
    expect(() => RolloutFile.open(path, { ...settings, model: 'other' }, 2)).toThrow(ConfigError);
    expect(() => RolloutFile.open(path, { ...settings, model: 'other' }, 2)).toThrow(/model: "m" there, "other" now/);
  });

  it('reads the task ids of ATIF lines, and starts afresh without a settings file', () => {
    const path = join(dir, 'a.jsonl');
    RolloutFile.open(path, settings, 2).append([atifLine('5', 0), atifLine('5', 1)]);
    expect([...RolloutFile.open(path, settings, 2).done]).toEqual(['5']);
    const fresh = join(dir, 'fresh.jsonl');
    RolloutFile.open(fresh, settings, 1).append([line('0', 0)]);
    expect(RolloutFile.open(fresh, settings, 1).resumed).toBe(1);
    rmSettings(fresh);
    expect(RolloutFile.open(fresh, settings, 1).resumed).toBe(0);
    expect(readFileSync(fresh, 'utf8')).toBe('');
  });

  it('a broken settings file or a line that is no object is a typed error naming the file, and the rollouts are kept', () => {
    const path = join(dir, 'broken.jsonl');
    RolloutFile.open(path, settings, 1).append([line('0', 0)]);
    for (const text of ['{"env": "ba', 'null', '[1]']) {
      writeFileSync(`${path}.run.json`, text);
      expect(() => RolloutFile.open(path, settings, 1)).toThrow(TrajectoryError);
      expect(() => RolloutFile.open(path, settings, 1)).toThrow(/broken\.jsonl\.run\.json/);
      expect(readFileSync(path, 'utf8')).toBe(`${line('0', 0)}\n`);
    }
    writeFileSync(`${path}.run.json`, JSON.stringify(settings));
    appendFileSync(path, 'null\n');
    expect(() => RolloutFile.open(path, settings, 1)).toThrow(/line 2: is not a JSON object/);
  });
});

function rmSettings(path: string): void {
  unlinkSync(`${path}.run.json`);
}
