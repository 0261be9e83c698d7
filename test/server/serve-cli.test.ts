/**
 * `intercode serve`'s flags are checked before any sandbox is made, each error naming its flag
 * (exit 2); the port is bound before anything else, so one in use is said at once; while
 * sandboxes warm the port answers 503.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ENV_PLUGINS } from '../../envs/index.js';
import { ConfigError } from '../../src/errors.js';
import { reservePort } from '../../src/server/index.js';

const MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
const serve = (...args: string[]) => {
  const run = spawnSync(process.execPath, ['--import', 'tsx', MAIN, 'serve', ...args], { encoding: 'utf8', env: { ...process.env, INTERCODE_SERVE_TOKEN: '' } });
  return { status: run.status, stderr: run.stderr.trim().split('\n').at(-1) };
};

describe('intercode serve flags', () => {
  it('refuses a host beyond loopback without a token, and a short token', () => {
    expect(serve('--env', 'bash', '--host', '0.0.0.0')).toEqual({
      status: 2,
      stderr: 'intercode: --host listening on 0.0.0.0 (not loopback) needs --token: anyone who reaches the port could run code in the sandboxes',
    });
    expect(serve('--env', 'bash', '--host', '0.0.0.0', '--token', 'abc')).toEqual({ status: 2, stderr: 'intercode: --token must be at least 8 characters' });
  });

  it('names the bad flag', () => {
    expect(serve('--env', 'nope')).toEqual({ status: 2, stderr: `intercode: --env must be one of ${ENV_PLUGINS.map((p) => p.name).join(', ')}, got "nope"` });
    expect(serve('--env', 'bash', '--port', '70000').stderr).toMatch(/--port must be an integer 0–65535/);
    expect(serve('--env', 'bash', '--max-sessions', '0').stderr).toMatch(/--max-sessions must be a positive integer/);
    expect(serve('--env', 'bash', '--idle-timeout', 'x').stderr).toMatch(/--idle-timeout must be a positive number of seconds/);
    expect(serve('--env', 'bash', '--spares', '-1').stderr).toMatch(/--spares must be an integer ≥ 0/);
  });
}, 120_000);

describe('intercode serve: the port first', () => {
  it('a port in use: one line naming --port, exit 2, before any engine is asked', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    // No engine at DOCKER_HOST: reaching it would end with "No Docker engine answers" instead.
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN, 'serve', '--env', 'bash', '--port', String(port)], {
      env: { ...process.env, INTERCODE_SERVE_TOKEN: '', DOCKER_HOST: `unix://${join(tmpdir(), 'no-docker-engine-here.sock')}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const status = await new Promise<number | null>((resolve) => child.once('close', resolve));
    await new Promise((resolve) => holder.close(resolve));
    expect(stderr).toBe(`intercode: --port ${port}: 127.0.0.1:${port} is in use by another process; pick another port (--port 0 takes any free one)\n`);
    expect(status).toBe(2);
  });

  it('reservePort: answers 503 with Retry-After until released; then the port is free; a held port is a ConfigError naming --port', async () => {
    const reserved = await reservePort('127.0.0.1', 0);
    const answer = await fetch(`http://localhost:${reserved.port}/health`);
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('2');
    expect(await answer.json()).toEqual({ detail: 'intercode serve is warming its sandboxes: try again shortly', code: 'WARMING_UP' });
    const second = await reservePort('127.0.0.1', reserved.port).catch((e: unknown) => e);
    expect(second).toBeInstanceOf(ConfigError);
    expect((second as ConfigError).details).toMatchObject({ option: '--port' });
    await reserved.release();
    const again = await reservePort('127.0.0.1', reserved.port);
    await again.release();
  });

  it('--help says that sessions past the spares get a sandbox on demand', () => {
    const help = spawnSync(process.execPath, ['--import', 'tsx', MAIN, 'serve', '--help'], { encoding: 'utf8' }).stdout.replace(/\s+/g, ' ');
    expect(help).toContain('Only --spares sandboxes are made ahead: a session past them gets one made when it connects');
  });
});
