/** `collect` and `export` refuse bad flags with one line naming the flag, before any sandbox starts. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { intercodeFromSource } from '../setup/cli.js';

const intercode = intercodeFromSource;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'intercode-rollout-flags-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('collect and export flags', () => {
  it.each([
    [['--policy', 'gold', '--format', 'atif'], '--format needs --policy llm:MODEL'],
    [['--policy', 'gold', '--samples-per-task', '4'], '--samples-per-task needs --policy llm:MODEL'],
    [['--policy', 'llm:'], '--policy llm: needs a model name'],
    [['--policy', 'llm:m', '--format', 'parquet'], '--format must be one of jsonl, hf-messages, atif, got "parquet"'],
    [['--policy', 'llm:m', '--format', 'atif', '--out', 'folder'], '--out --format atif writes JSON Lines'],
    [['--policy', 'llm:m', '--tokens', 'all'], '--tokens must be one of none, logprobs, ids, got "all"'],
    [['--policy', 'llm:m', '--temperature', '3'], '--temperature must be a number 0–2, got "3"'],
    [['--policy', 'llm:m', '--samples-per-task', '0'], '--samples-per-task'],
    [['--policy', 'llm:m', '--episodes', '3'], '--episodes is for gold, replay and checkpoint policies'],
  ])('collect %j is refused', async (args, message) => {
    const out = args.includes('--out') ? [] : ['--out', join(dir, 'x.jsonl')];
    const run = await intercode(['collect', '--env', 'bash', ...args, ...out]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(message);
  }, 60_000);

  it('help lists the LLM forms and no longer says llm is missing', async () => {
    const help = (await intercode(['collect', '--help'])).stdout;
    expect(help).toContain('llm:MODEL');
    expect(help).toContain('--samples-per-task');
    expect(help).not.toContain('not on this branch');
  }, 60_000);

  it('export names the file and line of a line that is not a rollout record', async () => {
    await writeFile(join(dir, 'demo.jsonl'), '{"env":"bash","task_id":"0","query":"q","actions":["ls"],"observations":["x"],"rewards":[0]}\n');
    const run = await intercode(['export', join(dir, 'demo.jsonl'), '--format', 'atif', '--out', join(dir, 'o.jsonl')]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/demo\.jsonl.*line 1.*format.*must be "intercode-rollout-v1"/);
    const back = await intercode(['export', join(dir, 'demo.jsonl'), '--format', 'intercode', '--out', join(dir, 'ic.json'), '--json']);
    expect(JSON.parse(back.stdout)).toEqual({ episodes: 1, format: 'intercode', out: join(dir, 'ic.json') });
  }, 60_000);
});
