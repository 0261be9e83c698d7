/**
 * What a person sees while `run`, `collect` and `eval` work: on a terminal (a real
 * pseudo-terminal from tmux) one progress bar with ETA, redrawn in place; with stderr not a
 * terminal, plain lines (at most one per 10 %), no escape codes. Runs on the SQL env's
 * embedded backend (no Docker); eval talks to a scripted OpenAI-compatible server here.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandExists } from '../../src/setup/host-facts.js';
import { IN_CI } from '../setup/docker.js';
import { TmuxTerminal } from './tmux.js';

const ROOT = join(import.meta.dirname, '../..');
const CLI = join(ROOT, 'bin/intercode.js');
const dir = mkdtempSync(join(tmpdir(), 'ic-progress-'));
const haveTmux = commandExists('tmux');
let model: Server;
let baseUrl = '';
let terminal: TmuxTerminal;

beforeAll(async () => {
  terminal = new TmuxTerminal(dir);
  // Every chat completion answers with the same SQL: enough for eval's loop and its progress.
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

afterAll(async () => {
  terminal?.close();
  await new Promise((resolve) => model?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

const commands = () => ({
  run: { args: ['run', 'sql', '--embedded'], label: 'tasks', total: 34, status: /solved 34$/ },
  collect: { args: ['collect', '--env', 'sql', '--embedded', '--policy', 'gold', '--out', join(dir, 'demos.jsonl')], label: 'episodes', total: 34, status: /solved 34$/ },
  eval: { args: ['eval', '--env', 'sql', '--embedded', '--turns', '2', '--out', join(dir, 'eval'), '--base-url', baseUrl, '--api-key', 'x', '--model', 'scripted'], label: 'episodes', total: 34, status: /success \d+\/34 \(/ },
});

/** Runs the CLI with stdout and stderr piped (not terminals). */
function runPiped(args: string[]): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stdout.resume();
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (status) => resolve({ status, stderr }));
  });
}

const quote = (arg: string) => `'${arg.replaceAll("'", "'\\''")}'`;
const ESC = '\u001b';

describe.skipIf(!haveTmux && !IN_CI)('progress on a terminal and off it', () => {
  for (const name of ['run', 'collect', 'eval'] as const) {
    it(`${name}: one live bar with ETA on a terminal`, async () => {
      if (!haveTmux) throw new Error('tmux is not installed: npx intercode setup --with-test-tools (or apt-get install tmux)');
      const { args, label, total, status: statusText } = commands()[name];
      if (name === 'eval') rmSync(join(dir, 'eval'), { recursive: true, force: true });
      const { status, raw, screen } = await terminal.run(name, `cd ${quote(ROOT)} && ${quote(process.execPath)} ${quote(CLI)} ${args.map(quote).join(' ')} >/dev/null`);
      expect(status, screen).toBe(0);
      const bars = screen.split('\n').filter((line) => line.startsWith(`${label} [`));
      expect(bars, screen).toHaveLength(1);
      const [, filled, done, percent, eta, rest] = new RegExp(`^${label} \\[([█░]+)\\] (\\d+)/${total} (\\d+)% \\| ETA (\\S+) \\| (.*)$`).exec(bars[0]!) ?? [];
      expect(filled, bars[0]).toMatch(/^█+$/);
      expect([Number(done), Number(percent)]).toEqual([total, 100]);
      expect(eta).toMatch(/^\d+s$/);
      expect(rest).toMatch(statusText);
      expect(screen).not.toContain(`${label}: `);
      // Redrawn in place: several frames, each after a carriage return or cursor movement, no newline between them.
      const frames = raw.split(`${label} [`).length - 1;
      expect(frames, raw.slice(0, 400)).toBeGreaterThanOrEqual(2);
      expect(raw.includes(`${ESC}[`) || raw.includes('\r')).toBe(true);
      expect(raw).toMatch(/ETA \d+s/);
    });

    it(`${name}: plain lines when stderr is not a terminal`, async () => {
      const { args, label, total } = commands()[name];
      if (name === 'eval') rmSync(join(dir, 'eval'), { recursive: true, force: true });
      // Not spawnSync: eval's model server runs on this process's event loop.
      const run = await runPiped([CLI, ...args]);
      expect(run.status, run.stderr).toBe(0);
      expect(run.stderr).not.toContain(ESC);
      const lines = run.stderr.split('\n').filter((line) => line.startsWith(`${label}: `));
      expect(lines.length).toBeGreaterThanOrEqual(2);
      expect(lines.length).toBeLessThanOrEqual(11);
      expect(lines.at(-1)).toMatch(new RegExp(`^${label}: ${total}/${total} `));
    });
  }
});
