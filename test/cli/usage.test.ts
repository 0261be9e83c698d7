/**
 * The CLI's usage surface: `--version`; a usage error commander finds (unknown option,
 * missing argument, unknown command) is one line on stderr with a hint where the rest is,
 * exit 2 (as the project's own usage errors); `--help` after an env name lists the flags
 * every env shares first, then that env's own flags only.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ENV_PLUGINS } from '../../envs/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = join(ROOT, 'src/cli/main.ts');

function cli(...args: string[]) {
  const run = spawnSync(process.execPath, ['--import', 'tsx', CLI, ...args], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, INTERCODE_DEBUG: '' } });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('usage', () => {
  it('--version prints the package version', () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const { status, stdout } = cli('--version');
    expect(status).toBe(0);
    expect(stdout.trim()).toBe(version);
  });

  it.each([
    [['run', 'bash', '--parallell', '3'], "intercode: unknown option '--parallell'; did you mean --parallel? (`intercode run --help` lists the rest)"],
    [['images', 'build', '--bogus'], "intercode: unknown option '--bogus' (`intercode images build --help` lists the rest)"],
    [['play'], "intercode: missing required argument 'env' (`intercode play --help` lists the rest)"],
    [['frob'], "intercode: unknown command 'frob' (`intercode --help` lists the rest)"],
  ])('%j: one line with a hint, exit 2', (args, line) => {
    const { status, stdout, stderr } = cli(...args);
    expect(stderr).toBe(`${line}\n`);
    expect(stdout).toBe('');
    expect(status).toBe(2);
  });

  it('`run ENV --help` lists the shared flags first, then that env\'s own only', () => {
    const bash = ENV_PLUGINS.find((p) => p.name === 'bash')!;
    const sql = ENV_PLUGINS.find((p) => p.name === 'sql')!;
    const { status, stdout } = cli('run', 'bash', '--help');
    expect(status).toBe(0);
    const long = (flags: string) => flags.split(/[ ,]/).find((w) => w.startsWith('--'))!;
    for (const flag of bash.flags) expect(stdout).toContain(long(flag.flags));
    const sqlOnly = sql.flags.filter((f) => !bash.flags.some((b) => b.flags === f.flags));
    expect(sqlOnly.length).toBeGreaterThan(0);
    for (const flag of sqlOnly) expect(stdout).not.toContain(`${long(flag.flags)} `);
    // Shared flags (--data, --parallel) come before the env's.
    expect(stdout.indexOf('--data')).toBeLessThan(stdout.indexOf('--testbed'));
    expect(stdout.indexOf('--parallel')).toBeLessThan(stdout.indexOf('--testbed'));
    // Without an env, every env's flags, under their own heading.
    const all = cli('run', '--help').stdout;
    for (const flag of sqlOnly) expect(all).toContain(long(flag.flags));
    expect(all).toMatch(/^Env options/m);
    // The same for a command naming its env with --env.
    const evalSql = cli('eval', '--env', 'sql', '--help').stdout;
    expect(evalSql).toContain('--embedded');
    expect(evalSql).not.toContain('--testbed');
  });
});
