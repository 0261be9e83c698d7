/**
 * The genuine client code of the ecosystems `intercode serve` speaks to (OpenEnv's client and
 * validator, the official MCP Python SDK), run in the Debian trixie chroot that
 * `../shared/clients/build-chroot.sh` builds (the host's Python packages are too old for them).
 *
 * Policy: without `../shared/clients` the tests skip saying why; under `CI=true` with it
 * present they run, and a chroot that cannot be built fails them. The chroot is cached at
 * {@link CLIENTS_ROOT} (about 2 minutes from nothing, 2 s when built; .ci/run builds it before
 * the tests). It mounts nothing: a test leaves only its script copy, which it removes.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** `../shared/clients` beside the repository. */
export const SHARED_CLIENTS = fileURLToPath(new URL('../../../shared/clients/', import.meta.url));
/** Where the chroot is built and kept between runs. */
export const CLIENTS_ROOT = '/var/cache/intercode/openenv-clients-root';

/** Why the genuine-client tests cannot run here, or undefined when they can. */
export function genuineClientsMissing(): string | undefined {
  if (!existsSync(join(SHARED_CLIENTS, 'build-chroot.sh'))) return `${SHARED_CLIENTS}build-chroot.sh is absent (../shared is not checked out beside the repository)`;
  if (process.getuid?.() !== 0) return 'building and entering the clients chroot needs root';
  return undefined;
}

/** Builds the chroot if needed (idempotent). @throws Error with the script's last lines when it fails. */
export function buildClientsChroot(): string {
  const run = spawnSync('bash', [join(SHARED_CLIENTS, 'build-chroot.sh'), CLIENTS_ROOT], { encoding: 'utf8', timeout: 900_000 });
  if (run.status !== 0) throw new Error(`build-chroot.sh failed (${run.status ?? run.signal}): ${run.stderr.split('\n').slice(-5).join('\n')}`);
  return CLIENTS_ROOT;
}

/**
 * Runs the Python file `script` inside the chroot with `args` (a copy of it, removed after) and
 * resolves with its stdout parsed as JSON.
 * @throws Error with stderr when it exits non-zero or prints no JSON.
 */
export async function runInClientsChroot(script: string, args: string[], timeoutMs = 300_000): Promise<unknown> {
  const dir = await mkdtemp(join(CLIENTS_ROOT, 'tmp', 'intercode-test-'));
  try {
    const inside = `/tmp/${dir.split('/').pop()!}/script.py`;
    await copyFile(script, join(dir, 'script.py'));
    const child = spawn('chroot', [CLIENTS_ROOT, '/usr/bin/env', '-i', 'PATH=/usr/bin:/bin', 'PYTHONPATH=/opt/clients', 'python3', inside, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    clearTimeout(timer);
    if (code !== 0) throw new Error(`the client script exited ${code}: ${stderr.slice(-3000)}`);
    try {
      return JSON.parse(stdout.trim().split('\n').pop() ?? '');
    } catch {
      throw new Error(`the client script printed no JSON: ${stdout.slice(-2000)} ${stderr.slice(-2000)}`);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
