import { readFile } from 'node:fs/promises';
import { DatasetError, ImageError } from '../../src/errors.js';
import type { BuildLog } from '../../src/images/image-builder.js';
import { packagePath } from '../../src/package-path.js';
import type { ImageProvisioning } from '../../src/sandbox/backends/engine-set.js';
import { DumpLoadError } from './errors.js';
import { dumpFileName, sqlDataRecipe, type SqlDump } from './images.js';

/** The built-in database as a server dump: its portable SQL inside `CREATE DATABASE library`. */
export async function builtinDump(): Promise<SqlDump> {
  const body = await readFile(packagePath('datasets', 'sql', 'library.sql'));
  return { label: 'built-in:library.sql', sql: Buffer.concat([Buffer.from('CREATE DATABASE IF NOT EXISTS `library`;\nUSE `library`;\n'), body]) };
}

/** Reads dump files. @throws DatasetError naming a dump that cannot be read or holds binary data. */
export async function readDumps(paths: readonly string[]): Promise<SqlDump[]> {
  return Promise.all(
    paths.map(async (path) => {
      let sql: Buffer;
      try {
        sql = await readFile(path);
      } catch (error) {
        throw new DatasetError({ file: path }, `cannot read the SQL dump (${(error as NodeJS.ErrnoException).code ?? 'unknown error'})`, error);
      }
      // Checked before an image is built around it: MySQL refuses NUL bytes in a dump anyway.
      const nul = sql.indexOf(0);
      if (nul >= 0) {
        let line = 1;
        for (let i = 0; i < nul; i++) if (sql[i] === 10) line++;
        throw new DatasetError({ file: path, line }, 'not a SQL text dump: binary data (a NUL byte)');
      }
      return { label: path, sql };
    }),
  );
}

const FAILED = /intercode-dump-failed (\S+) (.*)/;

/**
 * Builds (or finds) the server image with `dumps` loaded, where `images` puts it (every engine of an EngineSet).
 * @throws DumpLoadError naming the dump and line when one fails to load; ImageError otherwise.
 */
export async function ensureSqlImage(images: ImageProvisioning, dumps: readonly SqlDump[], log: BuildLog): Promise<string> {
  try {
    return await images.ensureImage(await sqlDataRecipe(dumps), log);
  } catch (error) {
    const failed = error instanceof ImageError ? FAILED.exec(error.message) : null;
    if (!failed) throw error;
    const index = dumps.findIndex((d, i) => dumpFileName(i, d.label) === failed[1]);
    const message = failed[2]!.trim();
    const line = /at line (\d+)/.exec(message);
    throw new DumpLoadError(dumps[index]?.label ?? failed[1]!, line ? Number(line[1]) : null, message, error);
  }
}
