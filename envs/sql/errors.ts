import { ImageError, IntercodeError } from '../../src/errors.js';

/** A task names a database the backend does not have. */
export class DatabaseNotFoundError extends IntercodeError {
  constructor(database: string, known: readonly string[]) {
    super('DATASET_INVALID', `Database "${database}" is not on the SQL backend; it has: ${known.join(', ') || '(none)'}`, {
      details: { field: 'db', database, known },
    });
  }
}

/** A dump given to the server image did not load; names the dump and the line of the first failing statement. */
export class DumpLoadError extends ImageError {
  constructor(
    readonly dump: string,
    readonly line: number | null,
    serverMessage: string,
    cause?: unknown,
  ) {
    super('IMAGE_BUILD_FAILED', `SQL dump ${dump}${line === null ? '' : `, line ${line}`}: failed to load: ${serverMessage}`, {
      details: { dump, line, serverMessage },
      cause,
    });
  }
}
