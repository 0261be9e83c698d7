/**
 * docs/quickstart-llm.md, verbatim: every ```bash block of the page, in order, run with bash
 * as a user would paste it, in a fresh folder that looks like the repository root (each of
 * the root's entries linked in, so `npx intercode` runs this checkout's build and the page's
 * outputs land under the folder's own runs/). A block that starts a server (`mock-llm`,
 * `view`) is started, waited for until it says it is ready, and stopped when the page is
 * done; every other block must exit 0. The outputs the page promises are checked: the eval
 * summary it quotes, the page `view` serves, the rollouts with token ids.
 * Needs the build (`npm ci` runs it) and the bash image; Docker-backed (CI: must run).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dockerTestFile, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { tempDir } from '../setup/temp-dirs.js';
import { ROOT } from './doc-pages.js';

const { engine } = await dockerTestFile();
const PAGE = readFileSync(join(ROOT, 'docs', 'quickstart-llm.md'), 'utf8');
/** The page's ```bash blocks, in order. */
const BLOCKS = [...PAGE.matchAll(/^```bash\n([\s\S]*?)^```$/gm)].map((m) => m[1]!.trim());
/** Blocks that start a server, and the line that says it is ready. */
const SERVERS: [RegExp, RegExp][] = [
  [/^npx intercode mock-llm /, /"baseUrl":"http:\/\/127\.0\.0\.1:\d+\/v1"/],
  [/^npx intercode view /, /http:\/\/(127\.0\.0\.1|localhost):\d+/],
];

/** A folder that looks like the repository root: its entries linked, but no runs/ of its own. */
function rootLookalike(): string {
  const dir = tempDir('intercode-quickstart-');
  for (const entry of readdirSync(ROOT)) if (entry !== 'runs' && entry !== '.git') symlinkSync(join(ROOT, entry), join(dir, entry));
  return dir;
}

const running: ChildProcess[] = [];
afterAll(async () => {
  for (const child of running) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(-child.pid!, 'SIGINT'); // the whole group, as Ctrl-C in its terminal: bash, npx and the server
    const late = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 15_000);
    await exited;
    clearTimeout(late);
  }
});

/** Starts `block` in `cwd` as its own process group; resolves with its output so far once `ready` appears in it. */
function startServer(block: string, cwd: string, ready: RegExp): Promise<string> {
  const child = spawn('bash', ['-c', block], { cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  running.push(child);
  let output = '';
  return new Promise((resolve, reject) => {
    const seen = (chunk: Buffer) => {
      output += chunk.toString();
      const match = ready.exec(output);
      if (match) resolve(output);
    };
    child.stdout!.on('data', seen);
    child.stderr!.on('data', seen);
    child.once('exit', (code) => reject(new Error(`\`${block}\` exited with ${code} before it was ready:\n${output}`)));
  });
}

describe.skipIf(skipWithoutEngine(engine, 'the LLM quickstart'))('docs/quickstart-llm.md, verbatim', () => {
  it('its bash blocks run in order: mock-llm, eval, view, collect --tokens ids', async () => {
    requireEngine(engine);
    expect(BLOCKS.length).toBeGreaterThanOrEqual(5);
    const order = ['mock-llm', 'eval', 'view', 'collect'].map((command) => BLOCKS.findIndex((b) => b.startsWith(`npx intercode ${command} `)));
    expect(order.every((i, k) => i >= 0 && (k === 0 || i > order[k - 1]!)), `blocks in that order: ${JSON.stringify(order)}`).toBe(true);
    const cwd = rootLookalike();
    const outputs: string[] = [];
    for (const block of BLOCKS) {
      const server = SERVERS.find(([starts]) => starts.test(block));
      if (server) {
        const ready = await startServer(block, cwd, server[1]);
        if (/^npx intercode view /.test(block)) {
          const url = server[1].exec(ready)![0];
          const page = await fetch(url);
          expect(page.status, `${block}: GET ${url}`).toBe(200);
        }
        outputs.push(ready);
        continue;
      }
      const run = spawnSync('bash', ['-e', '-o', 'pipefail', '-c', block], { cwd, encoding: 'utf8', timeout: 540_000 });
      expect(run.status, `\`${block}\`\n${run.stdout}\n${run.stderr}`).toBe(0);
      outputs.push(run.stdout);
    }
    // The summary the page quotes is the one eval prints.
    const quoted = /^```\n(episodes {14}\d+\n[\s\S]*?)^```$/m.exec(PAGE)![1]!;
    const evalOut = outputs[BLOCKS.findIndex((b) => b.startsWith('npx intercode eval '))]!;
    for (const line of quoted.trim().split('\n')) expect(evalOut).toContain(line);
    // 45 rollouts, every one with the server's token ids and a loss mask over them.
    const records = readFileSync(join(cwd, 'runs', 'quickstart-rollouts.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { reward: number; tokens: { episode: { token_ids: number[]; loss_mask: number[] } } });
    expect(records).toHaveLength(45);
    for (const r of records) expect(r.tokens.episode.token_ids.length).toBe(r.tokens.episode.loss_mask.length);
    expect(records.filter((r) => r.reward === 1)).toHaveLength(40);
    expect(outputs.at(-1)).toMatch(/^task \d+: reward [\d.]+, \d+ token ids, \d+ of them from the model\n$/);
  }, 600_000);
});
