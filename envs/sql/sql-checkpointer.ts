import type { Checkpointer, SavedPart } from '../../src/env/checkpoint/index.js';
import { CheckpointError } from '../../src/errors.js';
import type { SqlBackend, SqlSession, SqlSessionState } from './backend.js';

/** What an SQL checkpoint keeps of its session: the backend's identity and mode, and the session's database. */
export interface SqlSessionPart {
  /** The backend's identity (what data it serves) and whether its data is fixed (read-only): a restore needs the same. */
  readonly backend: string;
  readonly dataFixed: boolean;
  readonly session: SqlSessionState;
}

/** What an SQLite checkpoint does not carry (listed in its `info.dropped.shellValues`). */
export const SQLITE_VALUES_NOT_CARRIED: readonly string[] = [
  'last_insert_rowid(), changes() and total_changes() (a restored connection starts them over)',
  'data_version (per connection)',
  'the random() sequence',
];

/**
 * An SQL episode's session carried by the backend: writable mode saves the data's bytes
 * (SQLite's database, MariaDB's dump) in memory, read-only mode only its name; a restore
 * opens a new session from them, on a backend serving the same data in the same mode.
 */
export class SqlCheckpointer implements Checkpointer<SqlSession, SqlSessionPart> {
  constructor(private readonly backend: SqlBackend) {}

  /**
   * @throws CheckpointError CHECKPOINT_UNSUPPORTED for a backend whose sessions cannot be saved,
   *   CHECKPOINT_REFUSED for a session state not carried exactly (a PRAGMA run, temporary
   *   objects, an attached database, an open transaction; MariaDB's reasons in docs/fork.md).
   */
  async save(session: SqlSession): Promise<SavedPart<SqlSessionPart>> {
    const { backend } = this;
    if (!session.saveState || !backend.openSessionFrom) throw new CheckpointError('CHECKPOINT_UNSUPPORTED', `the ${backend.identity} backend cannot save a session`);
    const saved = await session.saveState();
    return {
      part: { backend: backend.identity, dataFixed: backend.dataFixed, session: saved },
      info: { layer: { paths: 0, bytes: 0, archiveBytes: 0 }, dropped: { processes: [], shellValues: saved.notCarried ?? SQLITE_VALUES_NOT_CARRIED }, database: { bytes: saved.data?.byteLength ?? 0 } },
    };
  }

  /**
   * @throws CheckpointError CHECKPOINT_REFUSED when this backend serves other data (reason
   *   `other-data`) or is writable where the checkpoint's was read-only or the reverse
   *   (`other-mode`: golds would be run on other data than the agent's).
   */
  async load(state: SqlSessionPart): Promise<SqlSession> {
    const { backend } = this;
    if (state.backend !== backend.identity) {
      throw new CheckpointError('CHECKPOINT_REFUSED', `the checkpoint's data is ${state.backend}'s, not ${backend.identity}'s`, { details: { reason: 'other-data', backend: state.backend, expected: backend.identity } });
    }
    if (state.dataFixed !== backend.dataFixed) {
      const mode = (fixed: boolean) => (fixed ? 'read-only' : 'writable');
      throw new CheckpointError('CHECKPOINT_REFUSED', `the checkpoint is of a ${mode(state.dataFixed)} session; this env's backend is ${mode(backend.dataFixed)}`, { details: { reason: 'other-mode' } });
    }
    if (!backend.openSessionFrom) throw new CheckpointError('CHECKPOINT_UNSUPPORTED', `the ${backend.identity} backend cannot restore a session`);
    return backend.openSessionFrom(state.session);
  }
}
