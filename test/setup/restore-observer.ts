/**
 * What the restore-equivalence test and sweep observe of a sandbox, the previous episodes
 * they play, and how two observations are compared (see test/integration/restore-equivalence.test.ts).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { goldText, type Task } from '../../src/datasets/index.js';
import { packagePath } from '../../src/package-path.js';
import type { Workspace } from '../../src/pool/types.js';

/** The testbed's folders: every top-level folder but the system's (InterCode's list), and /testbed. */
const TESTBED = String.raw`$(for d in /*; do case $d in /bin|/boot|/dev|/etc|/home|/lib|/lib32|/lib64|/libx32|/media|/mnt|/opt|/proc|/root|/run|/sbin|/srv|/sys|/usr|/var|/tmp) ;; *) [[ -d $d && ! -L $d ]] && printf '%s\n' "$d";; esac; done)`;

/**
 * The observers, each line keyed by the path it is about: `find` (size, blocks, links, mode,
 * owner, atime, mtime of every path of the root file system but /proc and /sys), `du -ax /`,
 * `ls -lsaR --time-style=full-iso` of the testbed and /tmp, and `stat` of /dev's entries and
 * the mount points (type, mode, owner, device numbers: outside the root file system).
 */
export const OBSERVER = [
  String.raw`find / -xdev \( -path /proc -o -path /sys \) -prune -o -printf 'find\t%p\t%y %s %b %n %m %u %g %A@ %T@ %C@ %i\n' | LC_ALL=C sort`,
  String.raw`du -ax / | awk -F'\t' '{ print "du\t" $2 "\t" $1 }' | LC_ALL=C sort`,
  String.raw`ls -lsaR --time-style=full-iso ${TESTBED} /tmp | awk '/^\/.*:$/ { sec = substr($0, 1, length($0) - 1); next } NF >= 10 { n = $10; for (i = 11; i <= NF; i++) n = n " " $i; print "ls\t" sec "/" n "\t" $0 }'`,
  String.raw`shopt -s dotglob; stat -c $'mount\t%n\t%F %a %u %g %t %T' -- /dev/* $(while read -r _ _ _ _ m _; do echo "$m"; done < /proc/self/mountinfo) | LC_ALL=C sort -u`,
].join('; ');

/**
 * Paths the engine makes for each sandbox (its init layer: /.dockerenv, /etc, /etc/mtab; mount
 * points and the folders they are in): their
 * times are the sandbox's creation time, so two new sandboxes differ there too. And the
 * engine's init, /usr/sbin/docker-init: the host's own file, bind-mounted into every sandbox,
 * whose atime moves (relatime: once a day) whenever any container starts — seen in CI when a
 * sandbox was started 24 hours after the last move, between the two sandboxes' observations.
 */
export const PER_SANDBOX = new Set(['/', '/.dockerenv', '/dev', '/etc', '/etc/mtab', '/etc/hostname', '/etc/hosts', '/etc/resolv.conf', '/run', '/run/intercode', '/usr', '/usr/sbin', '/usr/sbin/docker-init', '/proc', '/sys']);

/** The observers' output in `workspace` (through the engine: no shell of the sandbox's own, no output cap). */
export async function observe(workspace: Workspace): Promise<string> {
  const result = await workspace.sandbox.exec(['bash', '-c', OBSERVER], { timeoutMs: 300_000 });
  return wellFormed(result.output.toString(), result.exitCode);
}

/** Lines every sandbox's observation holds, one per observer: without one, that observer printed nothing. */
const ANCHORS = ['find\t/\t', 'du\t/\t', 'ls\t/tmp/.\t', 'mount\t/dev/null\t'];
/** Fewer `find` lines than this is no root file system (Debian's base image alone has thousands). */
const MIN_FIND_LINES = 1_000;

/**
 * `observed`, when each observer printed what it prints of any sandbox (the root folder, /tmp,
 * /dev/null, a root file system's worth of paths); else throws saying what is missing. Two
 * broken observations would compare equal: a comparison of them proves nothing.
 */
export function wellFormed(observed: string, exitCode: number | null): string {
  const lines = observed.split('\n');
  const missing = ANCHORS.filter((anchor) => !lines.some((line) => line.startsWith(anchor)));
  const found = lines.filter((line) => line.startsWith('find\t')).length;
  if (missing.length > 0 || found < MIN_FIND_LINES) {
    throw new Error(`the observers' output is not a sandbox's (exit code ${exitCode}, ${observed.length} bytes, ${found} find lines, missing ${missing.map((a) => JSON.stringify(a.trimEnd())).join(', ') || 'none'}): ${JSON.stringify(observed.slice(0, 200))}`);
  }
  return observed;
}

/** The path a line is about (`ls`: `dir/.` is dir, `dir/..` its parent). */
function pathOf(line: string): string {
  const path = line.split('\t')[1] ?? '';
  if (path.endsWith('/..')) return path.slice(0, path.lastIndexOf('/', path.length - 4)) || '/';
  if (path.endsWith('/.')) return path.slice(0, -2) || '/';
  return path;
}

/**
 * A line about a {@link PER_SANDBOX} path without what differs between two new sandboxes
 * there: `find`'s times, inode number and link count (those of the mount points /proc and
 * /sys follow the processes), `ls`'s link count and times. Its type, size, blocks, mode and
 * owner stay: an agent's `chmod 700 /`, or a `/` grown by files made and deleted there, is
 * seen.
 */
export function withoutPerSandboxFields(line: string): string {
  const [observer, path, fields = ''] = line.split('\t');
  const words = fields.split(' ');
  if (observer === 'find') return [observer, path, [words[0], words[1], words[2], ...words.slice(4, 7)].join(' ')].join('\t');
  if (observer === 'ls') {
    const columns = fields.trim().split(/ +/);
    return [observer, path, [columns[0], columns[1], ...columns.slice(3, 6), ...columns.slice(9)].join(' ')].join('\t');
  }
  return line;
}

/** The lines of `a` and `b` that differ (`-` only in a, `+` only in b), those of {@link PER_SANDBOX} paths without their per-sandbox fields. */
export function compareObservations(a: string, b: string): string[] {
  const kept = (text: string) => text.split('\n').filter(Boolean).map((line) => (PER_SANDBOX.has(pathOf(line)) ? withoutPerSandboxFields(line) : line));
  const count = new Map<string, number>();
  for (const line of kept(a)) count.set(line, (count.get(line) ?? 0) + 1);
  for (const line of kept(b)) count.set(line, (count.get(line) ?? 0) - 1);
  return [...count].filter(([, n]) => n !== 0).map(([line, n]) => `${n > 0 ? '-' : '+'} ${line}`).sort((x, y) => pathOf(x.slice(2)).localeCompare(pathOf(y.slice(2))));
}

/** Hostile previous episodes, over the testbed, /tmp and /root. */
export const HOSTILE_EPISODES = [
  // Every folder filled and emptied (ext4 never shrinks a folder).
  String.raw`find ${TESTBED} /tmp /root -xdev -type d -print0 | while IFS= read -r -d '' d; do (cd "$d" && seq 300 | sed 's/^/zz/' | xargs touch && seq 300 | sed 's/^/zz/' | xargs rm); done`,
  // Every file's atime set.
  String.raw`find ${TESTBED} /etc /root -xdev -exec touch -a {} +`,
  // Every file read, every folder listed: nothing written.
  String.raw`find / -xdev -type f -size -1M -exec cat {} + > /dev/null 2>&1; ls -laR / > /dev/null 2>&1; true`,
  // Mass creation and deletion; the testbed emptied and made again.
  String.raw`mkdir -p /tmp/mass && (cd /tmp/mass && seq 20000 | xargs touch) && rm -rf /tmp/mass; for t in ${TESTBED}; do rm -rf "$t"/* && mkdir -p "$t/new"; done`,
  // The root folder itself: its mode and owner, and its size (grown by files made and deleted there).
  String.raw`chmod 700 / && chown 1:1 /`,
  String.raw`(cd / && seq 400 | sed 's/^/zz-a-longer-name-/' | xargs touch && seq 400 | sed 's/^/zz-a-longer-name-/' | xargs rm)`,
  // Outside the writable layer: the modes and owners of /dev's entries and of mount points.
  String.raw`chmod 600 /dev/null && chown 1:1 /dev/shm && chmod 700 /dev/pts /proc`,
  // Processes, shared memory, a /dev entry: nothing in the root file system.
  String.raw`(sleep 1000 &); echo x > /dev/shm/x; echo y > /dev/extra`,
];

/** The golds of `tasks` as previous episodes: all of them, or `sample` of them spread evenly. */
export function previousEpisodes(tasks: readonly Task[], sample: number): string[] {
  const golds = tasks.map((task) => goldText(task));
  if (golds.length <= sample) return golds;
  return Array.from({ length: sample }, (_, i) => golds[Math.floor((i * golds.length) / sample)]!);
}

/** InterCode's five NL2Bash files with their testbeds (data README: fs-4 has none, test_queries goes with fs-0). */
export const NL2BASH = [
  ['nl2bash_fs_1.json', 'fs-1.tar'],
  ['nl2bash_fs_2.json', 'fs-2.tar'],
  ['nl2bash_fs_3.json', 'fs-3.tar'],
  ['nl2bash_fs_4.json', 'none'],
  ['test_queries.json', 'fs-0.tar'],
] as const;

/** Where InterCode's NL2Bash files and testbeds are looked for (reference data, not in the repository). */
export const NL2BASH_DIR = join(packagePath(), '..', 'shared', 'intercode-data', 'nl2bash');

/** InterCode's NL2Bash files and testbeds, when ../shared/intercode-data is there. */
export function sharedNl2Bash(): { data: (file: string) => string; testbed: (file: string) => string } | undefined {
  if (!existsSync(NL2BASH_DIR)) return undefined;
  return { data: (file) => join(NL2BASH_DIR, file), testbed: (file) => join(NL2BASH_DIR, file) };
}

/**
 * The NL2Bash files a sweep plays (`all`: InterCode's five, else fs-3's only), each with the
 * options of its env; without the data each is there still, with `missing` saying what is
 * absent, so that the sweep's cases for it are counted as skipped instead of vanishing.
 */
export function nl2bashDatasets(all: boolean): { file: string; options: { data?: string; testbed?: string }; missing?: string }[] {
  const shared = sharedNl2Bash();
  return NL2BASH.filter(([data]) => all || data === 'nl2bash_fs_3.json').map(([data, testbed]) =>
    shared
      ? { file: data, options: { data: shared.data(data), testbed: testbed === 'none' ? 'none' : shared.testbed(testbed) } }
      : { file: data, options: {}, missing: `${NL2BASH_DIR} is absent (InterCode's reference data, see ../shared/intercode-data/README.md)` },
  );
}
