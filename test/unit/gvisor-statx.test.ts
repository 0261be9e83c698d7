/**
 * The statx library runsc sandboxes preload (src/sandbox/docker/gvisor-statx.ts): built with
 * the host's C compiler into the cache, handed out as an archive holding it at its sandbox
 * path, and a one-line ConfigError naming `--runtime runsc` when no compiler can build it.
 * (That `ls` works under gVisor with it is tested in a real runsc sandbox: shell-session's
 * `ls and stat read files` in .ci/gvisor-tests.)
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { extract } from 'tar-stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

const hasCompiler = spawnSync('cc', ['--version']).status === 0;

async function entries(archive: Buffer): Promise<Map<string, Buffer>> {
  const found = new Map<string, Buffer>();
  const reader = extract();
  reader.on('entry', (header, stream, next) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: unknown) => void chunks.push(chunk as Buffer));
    stream.on('end', () => {
      found.set(header.name, Buffer.concat(chunks));
      next();
    });
  });
  await new Promise<void>((resolve, reject) => {
    reader.on('finish', resolve);
    reader.on('error', reject);
    Readable.from([archive]).pipe(reader);
  });
  return found;
}

describe('the gVisor statx library', () => {
  let cache: string;
  beforeEach(async () => {
    cache = await mkdtemp(join(tmpdir(), 'ic-statx-'));
    vi.stubEnv('XDG_CACHE_HOME', cache);
    vi.resetModules();
  });
  afterEach(async () => {
    vi.unstubAllEnvs();
    await rm(cache, { recursive: true, force: true });
  });

  it.skipIf(!hasCompiler)('is built once into the cache and archived at its sandbox path, exporting statx', async () => {
    const { statxShimArchive, STATX_SHIM_PATH } = await import('../../src/sandbox/docker/gvisor-statx.js');
    const archive = await entries(await statxShimArchive());
    expect([...archive.keys()]).toEqual(['run/intercode-gvisor', STATX_SHIM_PATH.slice(1)]);
    const [library] = await readdir(join(cache, 'intercode-ts', 'gvisor'));
    expect(library).toMatch(/^statx-[0-9a-f]{16}\.so$/);
    const symbols = execFileSync('nm', ['-D', '--defined-only', join(cache, 'intercode-ts', 'gvisor', library!)], { encoding: 'utf8' });
    expect(symbols).toMatch(/ T statx$/m);
    expect(archive.get(STATX_SHIM_PATH.slice(1))!.subarray(0, 4).toString('latin1')).toBe('\x7fELF');
  });

  it('without a compiler: a ConfigError naming --runtime runsc and the fix, and the next call tries again', async () => {
    vi.stubEnv('CC', '/nonexistent/cc');
    const { statxShimArchive } = await import('../../src/sandbox/docker/gvisor-statx.js');
    const { ConfigError } = await import('../../src/errors.js');
    const error = await statxShimArchive().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/^--runtime runsc needs a small library built on this host .*no C compiler \(cc\) was found; install gcc and libc6-dev/);
    expect(await readdir(join(cache, 'intercode-ts', 'gvisor'))).toEqual([]);
    if (!hasCompiler) return;
    vi.stubEnv('CC', 'cc');
    expect((await statxShimArchive()).length).toBeGreaterThan(0);
  });
});
