import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SandboxError } from '../../errors.js';
import { packagePath } from '../../package-path.js';

const run = promisify(execFile);

/** The helper's source, shipped with the package. */
export const HELPER_SOURCE = packagePath('native', 'episode-root.c');

/**
 * The episode-root helper compiled for this host (static: it runs inside containers of any
 * image), built once per source version into `cacheDir` (default: /var/cache/intercode as
 * root, else ~/.cache/intercode-ts) with gcc and libseccomp (`intercode setup` installs both).
 * @throws SandboxError SANDBOX_UNAVAILABLE when it cannot be built, saying what is missing.
 */
export async function helperBinary(cacheDir = defaultCacheDir()): Promise<string> {
  const source = await readFile(HELPER_SOURCE);
  const digest = createHash('sha256').update(source).digest('hex').slice(0, 16);
  const binary = join(cacheDir, `episode-root-${digest}`);
  if (await stat(binary).then(() => true, () => false)) return binary;
  await mkdir(cacheDir, { recursive: true });
  const partial = `${binary}.${process.pid}.partial`;
  try {
    await run('gcc', ['-O2', '-Wall', '-static', '-o', partial, HELPER_SOURCE, '-lseccomp'], { timeout: 120_000 });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? String(error);
    throw new SandboxError('SANDBOX_UNAVAILABLE', `Could not build the episode-root helper (gcc -static … -lseccomp; \`intercode setup\` installs gcc and libseccomp-dev): ${stderr.slice(0, 600)}`, { cause: error });
  }
  await rename(partial, binary);
  return binary;
}

function defaultCacheDir(): string {
  return process.getuid?.() === 0 ? '/var/cache/intercode' : join(homedir(), '.cache', 'intercode-ts');
}
