import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ConfigError } from '../../errors.js';
import { packEntries } from '../../images/tar.js';

const execFileAsync = promisify(execFile);

/**
 * gVisor up to at least Debian's runsc 20221219 answers EINVAL to `statx` with
 * `AT_NO_AUTOMOUNT`, which coreutils' `ls` and `stat` always pass: both fail on every path.
 * This library, preloaded into a sandbox's processes, calls the system call without that
 * flag. A sandbox has no automount points, so the flag changes nothing there under any
 * runtime: the library is correct whether the runsc at hand needs it or not.
 */
const SOURCE = `#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *buf) {
  return (int) syscall(SYS_statx, dirfd, path, flags & ~AT_NO_AUTOMOUNT, mask, buf);
}
`;

/** Where the library sits in a gVisor sandbox (/run: outside what the bash env's git sees). */
export const STATX_SHIM_PATH = '/run/intercode-gvisor/statx.so';

/** The sandbox environment that loads it into every dynamically linked process. */
export const STATX_SHIM_ENV = `LD_PRELOAD=${STATX_SHIM_PATH}`;

let built: Promise<Buffer> | undefined;

/**
 * The shim, compiled with the host's C compiler once per source (kept in
 * `$XDG_CACHE_HOME/intercode-ts/gvisor`, else `~/.cache/…`), as a tar archive holding it at
 * {@link STATX_SHIM_PATH} (relative), ready for `putArchive` at `/`.
 * @throws ConfigError naming `--runtime runsc` when no compiler can build it.
 */
export function statxShimArchive(): Promise<Buffer> {
  built ??= compile().then(archive, (error: unknown) => {
    built = undefined;
    throw error;
  });
  return built;
}

async function compile(): Promise<Buffer> {
  const hash = createHash('sha256').update(SOURCE).digest('hex').slice(0, 16);
  const dir = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'intercode-ts', 'gvisor');
  const library = join(dir, `statx-${hash}.so`);
  const cached = await readFile(library).catch(() => undefined);
  if (cached) return cached;
  await mkdir(dir, { recursive: true });
  const scratch = join(dir, `.build-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    await writeFile(`${scratch}.c`, SOURCE);
    try {
      await execFileAsync(process.env.CC || 'cc', ['-shared', '-fPIC', '-O2', '-o', `${scratch}.so`, `${scratch}.c`]);
    } catch (error) {
      const reason = (error as { code?: unknown }).code === 'ENOENT' ? 'no C compiler (cc) was found' : String((error as { stderr?: unknown }).stderr ?? error).trim().split('\n')[0];
      throw new ConfigError('--runtime runsc', `needs a small library built on this host (ls and stat fail under this gVisor without it), and building it failed: ${reason}; install gcc and libc6-dev (\`intercode setup\` does)`);
    }
    // Renamed into place: a concurrent build or a crash never leaves a partial library.
    await rename(`${scratch}.so`, library);
    return await readFile(library);
  } finally {
    await rm(`${scratch}.c`, { force: true });
    await rm(`${scratch}.so`, { force: true });
  }
}

function archive(library: Buffer): Promise<Buffer> {
  const file = STATX_SHIM_PATH.slice(1);
  return packEntries([
    { name: file.slice(0, file.lastIndexOf('/')), type: 'directory', mode: 0o755 },
    { name: file, type: 'file', content: library, mode: 0o644 },
  ]);
}
