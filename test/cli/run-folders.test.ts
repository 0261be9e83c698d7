/**
 * One run folder by default: `run`, `collect` and `eval` (embedded SQLite: no engine needed)
 * write under `$INTERCODE_RUNS_DIR/<command>-<time>/` with a result.json holding the figures
 * `--json` printed, the command line, versions, engine and dataset digest; the last line
 * names the folder and the view command; existing output flags keep working; a command that
 * fails leaves no folder; `intercode list` shows envs and the runs; `view` reads the folders.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openRunFolder, writeRunResult, datasetFacts } from '../../src/cli/run-folder.js';
import { discoverRuns } from '../../src/view/index.js';
import { intercodeFromSource } from '../setup/cli.js';
import { tempDir } from '../setup/temp-dirs.js';

let model: Server;
let baseUrl = '';

beforeAll(async () => {
  // Every chat completion answers with the same SQL: enough for eval's loop.
  model = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ id: 'c', object: 'chat.completion', model: 'scripted', choices: [{ index: 0, message: { role: 'assistant', content: '```sql\nSELECT 1\n```' }, finish_reason: 'stop' }], usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 } }));
    });
  });
  await new Promise<void>((resolve) => model.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(model.address() as { port: number }).port}/v1`;
});
afterAll(() => new Promise((resolve) => model?.close(resolve)));

/** The run folder the last line names, checked against the view command it gives. */
function announced(text: string): string {
  const last = text.trimEnd().split('\n').at(-1)!;
  const match = /^run folder: (\S+) \(look at it: intercode view (\S+)\)$/.exec(last);
  expect(match, `last line: ${last}`).not.toBeNull();
  expect(match![2]).toBe(match![1]);
  return match![1]!;
}

const readResult = (dir: string) => JSON.parse(readFileSync(join(dir, 'result.json'), 'utf8'));

describe('run folders', () => {
  it('run: result.json holds what --json printed, the command line, versions, engine, dataset digest; trajectories beside it', async () => {
    const root = tempDir('ic-runs-run-');
    const { code, stdout, stderr } = await intercodeFromSource(['run', 'sql', '--embedded', '--json'], { env: { INTERCODE_RUNS_DIR: root } });
    expect(code, stderr).toBe(0);
    const dir = announced(stderr);
    expect(dir).toMatch(new RegExp(`^${root}/run-\\d{4}-\\d\\d-\\d\\dT\\d\\d-\\d\\d-\\d\\dZ$`));
    const printed = JSON.parse(stdout);
    const result = readResult(dir);
    expect(result.figures).toEqual(printed);
    expect(result).toMatchObject({ command: 'run', commandLine: 'intercode run sql --embedded --json', argv: ['run', 'sql', '--embedded', '--json'], dataset: { source: '(built-in)', tasks: 34 } });
    expect(result.dataset.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(result.versions.intercode).toMatch(/^\d+\.\d+\.\d+/);
    expect(result.engine.episodes).toMatch(/^episode scheduler/);
    expect(readdirSync(join(dir, 'trajectories'))).toHaveLength(34);
    const catalogue = await discoverRuns([dir], dir);
    expect(catalogue.sources.map((s) => s.title)).toEqual(['InterCode episode logs (--trajectories): trajectories/']);
    expect((await catalogue.sources[0]!.counted()).figures).toMatchObject({ episodes: 34, solved: 34 });
  }, 120_000);

  it('collect and eval: the episodes in the folder, the last line names it; --out keeps working', async () => {
    const root = tempDir('ic-runs-collect-');
    const collect = await intercodeFromSource(['collect', '--env', 'sql', '--embedded', '--policy', 'gold', '--episodes', '5'], { env: { INTERCODE_RUNS_DIR: root } });
    expect(collect.code, collect.stderr).toBe(0);
    const dir = announced(collect.stdout);
    expect(dir.startsWith(`${root}/collect-`)).toBe(true);
    expect(readFileSync(join(dir, 'episodes.jsonl'), 'utf8').trim().split('\n')).toHaveLength(5);
    expect(readResult(dir)).toMatchObject({ command: 'collect', figures: { episodes: 5, solved: 5, out: join(dir, 'episodes.jsonl') } });

    const own = join(tempDir('ic-runs-out-'), 'demos.jsonl');
    const explicit = await intercodeFromSource(['collect', '--env', 'sql', '--embedded', '--policy', 'gold', '--episodes', '2', '--out', own, '--json'], { env: { INTERCODE_RUNS_DIR: root } });
    expect(explicit.code, explicit.stderr).toBe(0);
    expect(JSON.parse(explicit.stdout).out).toBe(own);
    expect(readFileSync(own, 'utf8').trim().split('\n')).toHaveLength(2);
    expect(readResult(announced(explicit.stderr)).files).toEqual({ out: own });

    const evalRun = await intercodeFromSource(['eval', '--env', 'sql', '--embedded', '--turns', '2', '--limit', '3', '--base-url', baseUrl, '--api-key', 'x', '--model', 'scripted', '--json'], { env: { INTERCODE_RUNS_DIR: root } });
    expect(evalRun.code, evalRun.stderr).toBe(0);
    const evalDir = announced(evalRun.stderr);
    expect(readdirSync(evalDir).sort()).toEqual(['episodes.jsonl', 'ic_sql_try-again_scripted_2_turns.json', 'result.json', 'run.json']);
    expect(readResult(evalDir).figures).toEqual(JSON.parse(evalRun.stdout));
    const catalogue = await discoverRuns([evalDir], evalDir);
    expect(catalogue.sources.map((s) => s.title).sort()).toEqual(['InterCode result log: ic_sql_try-again_scripted_2_turns.json', 'eval episodes: episodes.jsonl']);

    const list = await intercodeFromSource(['list', '--json'], { env: { INTERCODE_RUNS_DIR: root } });
    expect(list.code, list.stderr).toBe(0);
    const listed = JSON.parse(list.stdout) as { envs: { name: string; builtinTasks: number | null }[]; runs: { dir: string; command: string }[] };
    expect(listed.envs.find((e) => e.name === 'sql')).toMatchObject({ builtinTasks: 34 });
    expect(listed.envs.find((e) => e.name === 'task')).toMatchObject({ builtinTasks: null });
    expect(listed.runs.map((r) => r.command).sort()).toEqual(['collect', 'collect', 'eval']);
  }, 180_000);

  it('a command that fails leaves no folder behind; --run-dir names the folder', async () => {
    const root = tempDir('ic-runs-fail-');
    const failed = await intercodeFromSource(['run', 'sql', '--embedded', '--data', join(root, 'missing.json')], { env: { INTERCODE_RUNS_DIR: root } });
    expect(failed.code).not.toBe(0);
    expect(readdirSync(root).filter((n) => n.startsWith('run-'))).toEqual([]);
    const chosen = join(root, 'mine');
    const ok = await intercodeFromSource(['run', 'sql', '--embedded', '--run-dir', chosen], { env: { INTERCODE_RUNS_DIR: root } });
    expect(ok.code, ok.stderr).toBe(0);
    expect(announced(ok.stdout)).toBe(chosen);
    expect(existsSync(join(chosen, 'result.json'))).toBe(true);
  }, 120_000);

  it('folders of runs started in the same second get -2, -3; result.json quotes what the shell would need', () => {
    const root = tempDir('ic-runs-unit-');
    const now = new Date('2026-12-02T10:00:00.500Z');
    const first = openRunFolder('eval', undefined, { INTERCODE_RUNS_DIR: root }, now);
    const second = openRunFolder('eval', undefined, { INTERCODE_RUNS_DIR: root }, now);
    expect([first, second]).toEqual([join(root, 'eval-2026-12-02T10-00-00Z'), join(root, 'eval-2026-12-02T10-00-00Z-2')]);
    writeRunResult(first, { command: 'eval', startedAt: now, figures: { episodes: 1 }, dataset: datasetFacts('d.json', []) }, ['node', 'intercode', 'eval', '--data', "it's here.json"]);
    expect(readResult(first)).toMatchObject({ commandLine: "intercode eval --data 'it'\\''s here.json'", dataset: { source: 'd.json', tasks: 0 }, figures: { episodes: 1 } });
  });
});
