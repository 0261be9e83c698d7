import { spawn, spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { SetupError } from '../../errors.js';
import type { SetupStep, StepContext, StepOutcome } from '../step.js';

/** The Debian packages of `names` that dpkg does not report installed. */
export function missingPackages(names: readonly string[]): string[] {
  return names.filter((name) => {
    const probe = spawnSync('dpkg-query', ['-W', '-f=${Status}', name], { encoding: 'utf8' });
    return probe.status !== 0 || !probe.stdout.includes('install ok installed');
  });
}

/** Runs apt-get with `args`, passing its "Get/Unpacking/Setting up" lines to `log`. @throws SetupError with the output's tail. */
async function aptGet(args: string[], log: (line: string) => void, stepId: string): Promise<void> {
  const child = spawn('apt-get', ['-o', 'DPkg::Lock::Timeout=600', '-o', 'Dpkg::Progress-Fancy=0', ...args], {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tail: string[] = [];
  const keep = (line: string) => {
    tail.push(line);
    if (tail.length > 15) tail.shift();
    if (/^(Get:\d+|Unpacking|Setting up|Fetched)/.test(line)) log(line.length > 110 ? `${line.slice(0, 107)}...` : line);
  };
  createInterface({ input: child.stdout! }).on('line', keep);
  createInterface({ input: child.stderr! }).on('line', keep);
  const status = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  }).catch((error: Error) => {
    throw new SetupError(stepId, `apt-get did not start: ${error.message}`, [], error);
  });
  if (status !== 0) throw new SetupError(stepId, `apt-get ${args.join(' ')} exited with ${status}: ${tail.join(' | ')}`, [`apt-get ${args.join(' ')}`]);
}

/**
 * A step that installs the Debian packages missing from `packages` (apt-get update once,
 * then install). With `canInstall` false (not root) it only checks, and fails with the
 * `sudo apt-get install` command when something is missing.
 */
export function aptPackagesStep(id: string, title: string, packages: readonly string[], canInstall = true): SetupStep {
  return {
    id,
    title,
    async run({ log }: StepContext): Promise<StepOutcome> {
      const missing = missingPackages(packages);
      if (missing.length === 0) return { status: 'skipped', detail: `already installed: ${packages.join(', ')}` };
      if (!canInstall) throw new SetupError(id, `missing ${missing.join(', ')}, and installing them needs root`, [`sudo apt-get install -y ${missing.join(' ')}`]);
      log(`apt-get update, then installing ${missing.join(', ')}`);
      await aptGet(['update', '-q'], log, id);
      await aptGet(['install', '-y', '-q', ...missing], log, id);
      const still = missingPackages(missing);
      if (still.length > 0) throw new SetupError(id, `still not installed after apt-get: ${still.join(', ')}`, [`apt-get install -y ${still.join(' ')}`]);
      return { status: 'done', detail: `installed ${missing.join(', ')}` };
    },
  };
}

/**
 * What the engine and the images need: Docker, debootstrap (offline base image), gVisor and
 * the C compiler that builds its statx library (src/sandbox/docker/gvisor-statx.ts), libseccomp
 * that the episode-root helper links (src/sandbox/roots/helper-binary.ts), btrfs tools.
 */
export const ENGINE_PACKAGES = ['docker.io', 'debootstrap', 'runsc', 'gcc', 'libc6-dev', 'libseccomp-dev', 'btrfs-progs'] as const;
/**
 * What the test suite needs beyond that: a browser for the plot page, tmux for terminal tests, websockets for protocol tests,
 * venv, pip and setuptools to install clients/python into a virtual environment offline, mkfs.xfs for the disk-quota probe.
 */
export const TEST_TOOL_PACKAGES = ['chromium', 'tmux', 'python3-websockets', 'python3-venv', 'python3-pip', 'python3-setuptools', 'xfsprogs', 'prometheus'] as const;
