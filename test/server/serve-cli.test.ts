/** `intercode serve`'s flags are checked before any sandbox is made, each error naming its flag (exit 2). */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ENV_PLUGINS } from '../../envs/index.js';

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
