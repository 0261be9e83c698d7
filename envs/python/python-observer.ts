import { createHash } from 'node:crypto';
import { createReadStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { extract } from 'tar-stream';
import type { ReplayObserver } from '../../src/env/checkpoint/index.js';
import { CheckpointError } from '../../src/errors.js';
import { CarryRefusal } from '../../src/sandbox/carry-refusal.js';
import type { CommandRunner } from '../../src/sandbox/shell/types.js';
import type { LayerLimits, Sandbox } from '../../src/sandbox/types.js';
import { PythonSession, type ObservedGlobal, type RanAction } from './python-session.js';

/** One path of the sandbox's written files, as compared: never its times or inode. */
export interface ObservedFile {
  path: string;
  /** tar's entry type: file, directory, symlink, link, fifo, character-device (an overlay whiteout)… */
  type: string;
  mode: number;
  uid: number;
  gid: number;
  size: number;
  /** A symbolic or hard link's target. */
  linkname?: string;
  /** A regular file's contents' sha256. */
  sha256?: string;
  /** Extended attributes but overlayfs's own (`trusted.overlay.*`), as tar's PAX records hold them. */
  xattrs?: Record<string, string>;
}

/** A Python episode's state as {@link PythonObserver} reads it. */
export interface PythonObservation {
  /** The code of the actions the interpreter ran since it started: what a score replays. */
  history: readonly string[];
  globals: readonly ObservedGlobal[];
  files: readonly ObservedFile[];
}

/** Bounds on an observation of the interpreter's namespace. */
export interface NamespaceLimits {
  /** Time all the reprs may take together (default 5 s): past it, refused (`repr-timed-out`). */
  timeoutMs: number;
  /** Characters of each repr kept to show (default 200); the whole repr is compared by its sha256. */
  headChars: number;
  /** Globals at most (default 10,000): more, refused (`too-many-globals`). */
  maxGlobals: number;
}

export const DEFAULT_NAMESPACE_LIMITS: NamespaceLimits = { timeoutMs: 5_000, headChars: 200, maxGlobals: 10_000 };

/** Why a Python episode's state could not be read exactly (a checkpoint or a replay's): the observer's refusal. */
export class PythonObservationRefusal extends CarryRefusal {}

/**
 * Reads a Python episode's state for a checkpoint by replay (SandboxEnv.replayObserver): the
 * interpreter's globals (read by a fork of the agent's interpreter: see
 * PythonSession.observe), the actions it ran, and the sandbox's written files, read on the host
 * from its writable layer (WrittenLayer.archive: the sandbox frozen, no process in it runs)
 * and compared by path, type, mode, owner, size, link target, contents' sha256 and extended
 * attributes — never times or inode numbers, which a replay cannot give.
 */
export class PythonObserver implements ReplayObserver<PythonObservation> {
  constructor(private readonly limits: NamespaceLimits = DEFAULT_NAMESPACE_LIMITS) {}

  /**
   * @throws PythonObservationRefusal (a repr that raises or overruns, too many globals; the
   *   layer's refusals: a socket, too large); CheckpointError CHECKPOINT_UNSUPPORTED where the
   *   runtime cannot read the layer or the runner is no Python session.
   */
  async observe(sandbox: Sandbox, runner: CommandRunner, limits: LayerLimits): Promise<PythonObservation> {
    if (!(runner instanceof PythonSession)) throw new CheckpointError('CHECKPOINT_UNSUPPORTED', "the episode's runner is not a Python session");
    if (!sandbox.writtenLayer) throw new CheckpointError('CHECKPOINT_UNSUPPORTED', "this runtime cannot read a sandbox's written files");
    const reading = await runner.observe(this.limits);
    if ('refused' in reading) {
      const what = reading.name === undefined ? 'the namespace' : `global ${reading.name}`;
      throw new PythonObservationRefusal(reading.refused, `${what} cannot be observed exactly (${reading.refused}${reading.error ? `: ${reading.error}` : ''})`, { ...(reading.name === undefined ? {} : { name: reading.name }), ...(reading.error === undefined ? {} : { error: reading.error }) });
    }
    const history = runner.history.map((action: RanAction) => action.code);
    return { history, globals: reading.globals, files: await writtenFiles(sandbox, limits) };
  }

  difference(recorded: PythonObservation, replayed: PythonObservation): Record<string, unknown> | undefined {
    if (recorded.history.length !== replayed.history.length || recorded.history.some((code, i) => code !== replayed.history[i])) {
      return { part: 'history', recorded: recorded.history.length, replayed: replayed.history.length };
    }
    const global = firstDifference(recorded.globals, replayed.globals, (g) => g.name, (a, b) => a.type === b.type && a.reprChars === b.reprChars && a.reprSha256 === b.reprSha256);
    if (global) return { part: 'globals', name: global.key, recorded: global.recorded && describeGlobal(global.recorded), replayed: global.replayed && describeGlobal(global.replayed) };
    const file = firstDifference(recorded.files, replayed.files, (f) => f.path, (a, b) => JSON.stringify(a) === JSON.stringify(b));
    if (file) return { part: 'files', path: file.key, recorded: file.recorded ?? null, replayed: file.replayed ?? null };
    return undefined;
  }
}

const describeGlobal = (g: ObservedGlobal) => `${g.type}: ${g.head}${g.reprChars > g.head.length ? '…' : ''}`;

/** The first key whose items differ (or that one side lacks), with both items. */
function firstDifference<T>(recorded: readonly T[], replayed: readonly T[], key: (item: T) => string, same: (a: T, b: T) => boolean): { key: string; recorded?: T; replayed?: T } | undefined {
  const theirs = new Map(replayed.map((item) => [key(item), item]));
  for (const item of recorded) {
    const other = theirs.get(key(item));
    if (!other || !same(item, other)) return { key: key(item), recorded: item, ...(other ? { replayed: other } : {}) };
    theirs.delete(key(item));
  }
  const [extra] = theirs.values();
  return extra === undefined ? undefined : { key: key(extra), replayed: extra };
}

/** Every path of `sandbox`'s writable layer (archived on the host, the sandbox frozen meanwhile), sorted, as compared. */
async function writtenFiles(sandbox: Sandbox, limits: LayerLimits): Promise<ObservedFile[]> {
  const dir = mkdtempSync(join(tmpdir(), 'intercode-python-observe-'));
  try {
    const archive = await sandbox.writtenLayer!.archive(join(dir, 'layer.tar'), limits);
    const files: ObservedFile[] = [];
    await new Promise<void>((resolve, reject) => {
      const reader = extract();
      reader.on('entry', (header, stream, next) => {
        const hash = createHash('sha256');
        stream.on('data', (chunk: unknown) => void hash.update(chunk as Buffer));
        stream.on('end', () => {
          const path = `/${header.name.replace(/^\.\/?/, '').replace(/\/$/, '')}`;
          const xattrs = Object.fromEntries(Object.entries(header.pax ?? {}).filter(([k]) => k.startsWith('SCHILY.xattr.') && !k.startsWith('SCHILY.xattr.trusted.overlay.')));
          files.push({
            path,
            type: header.type ?? 'file',
            mode: header.mode ?? 0,
            uid: header.uid ?? 0,
            gid: header.gid ?? 0,
            size: header.size ?? 0,
            ...(header.linkname ? { linkname: header.linkname } : {}),
            ...(header.type === 'file' ? { sha256: hash.digest('hex') } : {}),
            ...(Object.keys(xattrs).length ? { xattrs } : {}),
          });
          next();
        });
        stream.on('error', reject);
      });
      reader.on('finish', resolve);
      reader.on('error', reject);
      createReadStream(archive.path).on('error', reject).pipe(reader);
    });
    return files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
