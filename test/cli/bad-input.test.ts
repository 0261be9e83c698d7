/**
 * Every CLI command fed bad input ends with one line naming the file and the place (or the
 * flag), a non-zero exit status and no stack trace. The CLI runs from source (tsx), with
 * DOCKER_HOST pointing nowhere: bad input must be found before any sandbox or image is
 * made, so a case that reaches Docker fails here with "No Docker engine answers" instead.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeFailure, exitStatusOf, INTERNAL_ERROR_EXIT, printable } from '../../src/cli/error-boundary.js';
import { ConfigError, DatasetError } from '../../src/errors.js';
import { ENV_PLUGINS } from '../../envs/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = join(ROOT, 'src/cli/main.ts');
const BENCH = join(ROOT, 'test/cli/bench-entry.ts');

let dir: string;
const f = (name: string) => join(dir, name);

/** A recorded episode in InterCode's layout, to give commands one good file beside a bad one. */
const goodEpisode = {
  environment: 'ic_bash',
  query: 'q',
  turn_history: { actions: ['ls'], observations: ['a'], rewards: [1], valid_action: [true] },
  summary: { max_reward: 1 },
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'intercode-bad-input-'));
  const garbage = Buffer.alloc(600);
  for (let i = 0; i < garbage.length; i++) garbage[i] = (i * 73 + 11) % 256; // NULs, newlines, high bytes
  await writeFile(f('garbage.bin'), garbage);
  await writeFile(f('garbage.json'), garbage);
  await writeFile(f('empty.json'), '');
  await writeFile(f('bad.json'), '{"0": {,}\n');
  await writeFile(f('shape.json'), '[1, 2]\n');
  await writeFile(f('no-gold.json'), '[{"query": "x"}]\n');
  await writeFile(f('no-history.json'), '{"0": {"query": "q", "summary": {"max_reward": 0}}}\n');
  await writeFile(f('good.json'), JSON.stringify({ '0': goodEpisode }));
  await writeFile(f('demos-bad.jsonl'), '{"env": "bash"}\n');
  await writeFile(f('partial-record.jsonl'), '{"format": "intercode-rollout-v1", "env": "bash"}\n');
  await mkdir(f('evalrun'));
  await writeFile(f('evalrun/run.json'), '{"env": ');
  await mkdir(f('runs/broken'), { recursive: true });
  await writeFile(f('runs/broken/config.json'), '{"settings": {"env": "bash"}}\n');
  await mkdir(f('plotrun'));
  await writeFile(f('plotrun/metrics.jsonl'), '{"iteration": 0, "phase": "bc", "elapsedSec": 1}\n[1, 2]\n{"iteration": 1}\n');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Outcome {
  status: number | null;
  stderr: string;
}

function runCli(entry: string, args: string[]): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', entry, ...args], {
      cwd: ROOT,
      env: { ...process.env, DOCKER_HOST: `unix://${join(tmpdir(), 'no-docker-engine-here.sock')}`, INTERCODE_DEBUG: '', OPENAI_API_KEY: '', OPENAI_BASE_URL: '' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stderr }));
  });
}

/**
 * [command line, text the error line must contain (the file, the place), exit status];
 * `@x` is the fixture x, `#` any number (where a binary file's first NUL byte falls).
 */
const CASES: [string, string, number][] = [
  ['run bash --data @missing.json', '@missing.json: cannot read the file (ENOENT)', 1],
  ['run sql --data @empty.json', '@empty.json, line 1: malformed JSON (column 1)', 1],
  ['run python --data @bad.json', '@bad.json, line 1: malformed JSON (column 8)', 1],
  ['run ctf --data @garbage.json', '@garbage.json, line #: not JSON text: binary data', 1],
  ['run ctf --data @garbage.bin', '@garbage.bin: unsupported extension ".bin"', 1],
  ['run bash --data @shape.json', '@shape.json, record 1: a record must be an object', 1],
  ['run bash --data @no-gold.json', '@no-gold.json, record 1, field "gold": missing', 1],
  ['run bash --testbed @garbage.bin', '@garbage.bin: --testbed is neither a tar archive', 1],
  ['run bash --testbed @missing.tar', '@missing.tar: --testbed cannot be read (ENOENT)', 1],
  ['run sql --dump @garbage.bin', '@garbage.bin, line #: not a SQL text dump', 1],
  ['run bash --parallel abc', '--parallel must be a positive integer, got "abc"', 2],
  ['run nope', `<env> must be one of ${ENV_PLUGINS.map((p) => p.name).join(', ')}, got "nope"`, 2],
  ['play bash --data @bad.json', '@bad.json, line 1: malformed JSON', 1],
  ['play bash --task abc', '--task must be a task index (a whole number from 0), got "abc"', 2],
  ['replay @missing.json --env bash', '@missing.json: cannot read the file (ENOENT)', 1],
  ['replay @empty.json --env bash', '@empty.json, line 1: malformed JSON', 1],
  ['replay @garbage.bin --env bash', '@garbage.bin, line #: not JSON text: binary data', 1],
  ['replay @shape.json --env bash', '@shape.json: must be an object keyed by task index, got an array', 1],
  ['replay @no-history.json --env bash', '@no-history.json, episode "0", field "turn_history": missing', 1],
  ['replay @good.json --env bash --data @bad.json', '@bad.json, line 1: malformed JSON', 1],
  ['replay @good.json --env bash --show x', '--show must be a non-negative integer, got "x"', 2],
  ['replay @good.json --env bash --on-query-mismatch nope', '--on-query-mismatch must be one of fail, skip, trust-recording', 2],
  ['eval --env bash --base-url http://127.0.0.1:9/v1 --out @evalrun', '@evalrun/run.json, line 1: malformed JSON', 1],
  ['eval --env bash --base-url http://127.0.0.1:9/v1 --out @evalnew --data @shape.json', '@shape.json, record 1', 1],
  ['eval --env bash --out @evalnew --turns abc', '--turns must be a positive integer', 2],
  ['eval --env bash --out @evalnew', '--api-key is missing, and so is --base-url', 2],
  ['mock-llm --replay @garbage.bin', '@garbage.bin, line #: not JSON text: binary data', 1],
  ['mock-llm --replay @no-history.json', '@no-history.json, episode "0", field "turn_history": missing', 1],
  ['mock-llm --replay @good.json --port 99999', '--port must be an integer 0–65535', 2],
  ['collect --env bash --policy replay:@bad.json --out @c.jsonl', '@bad.json, line 1: malformed JSON', 1],
  ['collect --env bash --policy checkpoint:@runs/broken --out @c.jsonl', '@runs/broken/config.json, field "settings.shape": must be an object', 1],
  ['collect --env bash --data @empty.json --out @c.jsonl', '@empty.json, line 1: malformed JSON', 1],
  ['collect --env bash --policy llm:gpt-4o-mini --base-url http://127.0.0.1:9/v1 --out @c.jsonl --limit 0', '--limit must be a positive integer, got "0"', 2],
  ['train --env bash --demos @garbage.bin --run x --checkpoints @runs', '@garbage.bin, line #: not JSON text: binary data', 1],
  ['train --env bash --demos @demos-bad.jsonl --run x --checkpoints @runs', '@demos-bad.jsonl, line 1', 1],
  ['train --resume --run broken --checkpoints @runs', '@runs/broken/config.json, field "settings.shape": must be an object', 1],
  ['train --env bash --demos @good.json --run x --checkpoints @runs --held-out 2', '--held-out must be a number from 0 to 0.9', 2],
  ['plot @plotrun', '@plotrun/metrics.jsonl, line 2: a metric record must be a JSON object', 1],
  ['plot @garbage.bin', '@garbage.bin, line #: not JSON text: binary data', 1],
  ['plot @missing-run', 'found no metrics.jsonl at @missing-run', 2],
  ['export @missing.jsonl --format atif --out @x.jsonl', '@missing.jsonl: cannot be read (ENOENT)', 1],
  ['export @garbage.bin --format hf-messages --out @x.jsonl', '@garbage.bin, line 1: not valid JSON', 1],
  ['export @partial-record.jsonl --format hf-messages --out @x.jsonl', '@partial-record.jsonl, line 1, field "messages": must be a list', 1],
  ['export @partial-record.jsonl --format atif --out @x.jsonl', '@partial-record.jsonl, line 1, field "messages": must be a list', 1],
  ['export @shape.json --format intercode --out @x.json', '@shape.json, line 1: a line must be a JSON object', 1],
  ['images build nope', '--env names no env or image "nope"; known: bash, bash:ubuntu-jammy', 2],
  ['cleanup --engine bogus://x', '--engine must be unix:///path', 2],
];

describe('every command, bad input: one line naming the file and place, non-zero exit, no stack trace', () => {
  it.concurrent.each(CASES)('intercode %s', async (line, expected, status) => {
    const args = line.split(' ').map((arg) => arg.replace(/@(\S+)/g, (_, name: string) => f(name)));
    const { status: got, stderr } = await runCli(CLI, args);
    const lines = stderr.split('\n').filter((l) => l.trim() !== '');
    const last = lines.at(-1) ?? '';
    expect(stderr).not.toMatch(/^\s+at /m);
    expect(stderr).not.toContain('node:internal');
    expect(last).toBe(`intercode: ${last.slice('intercode: '.length)}`);
    const text = expected.replace(/@(\S+?)(?=[:,/ ]|$)/g, (_, name: string) => f(name));
    expect(last).toMatch(new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/#/g, '\\d+')));
    expect(got).toBe(status);
  });

  it.concurrent.each([
    ['vec --envs x', 'bench vec: --envs must be a comma-separated list of integers'],
    ['buffer --transitions abc', 'bench buffer: --transitions'],
    ['nope', 'bench: unknown bench "nope"'],
  ])('bench %s', async (line, expected) => {
    const { status, stderr } = await runCli(BENCH, line.split(' '));
    expect(stderr).not.toMatch(/^\s+at /m);
    expect(stderr.split('\n')[0]).toContain(expected);
    expect(status).toBe(2);
  });
});

describe('the error boundary', () => {
  it('prints a typed error as its message, one line even when the message quotes control characters', () => {
    expect(describeFailure(new DatasetError({ file: 'x.json', line: 3 }, 'bad\nthing\u0000'))).toBe('x.json, line 3: bad\\x0athing\\x00');
    expect(exitStatusOf(new ConfigError('--n', 'must be 1'))).toBe(2);
    expect(exitStatusOf(new DatasetError({ file: 'x' }, 'bad'))).toBe(1);
  });

  it('prints anything else as one line saying it is an internal error, with status 70', () => {
    const error = new TypeError("Cannot read properties of undefined (reading 'env')\n    at somewhere");
    expect(describeFailure(error)).toBe(
      "internal error (TypeError): Cannot read properties of undefined (reading 'env') — a bug: please report it with the command; INTERCODE_DEBUG=1 shows the stack",
    );
    expect(exitStatusOf(error)).toBe(INTERNAL_ERROR_EXIT);
    expect(describeFailure('a string')).toContain('internal error (string): a string');
    expect(printable('a\tb\u2028')).toBe('a\tb\\x2028');
  });
});
