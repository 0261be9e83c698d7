import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import type { ImageRecipe } from '../../src/images/recipe.js';
import { packagePath } from '../../src/package-path.js';

const source = (name: string) => packagePath('envs', 'sql', 'images', name);

/** Where the server's Unix socket lives inside the sandbox (a host directory is mounted there). */
export const SOCKET_DIR_IN_SANDBOX = '/run/intercode-sql';
export const SOCKET_NAME = 'mysqld.sock';

/** Where the server images with dumps loaded are tagged (`<repository>:<hash of the recipe>`). */
export const SQL_DATA_REPOSITORY = 'intercode-ts/sql-data';

/** A dump as the image loads it: its name in messages, and its SQL text. */
export interface SqlDump {
  /** What messages call it: the path the user gave, or `built-in:<name>`. */
  label: string;
  sql: Buffer;
}

/** MariaDB from Debian, configured as InterCode's MySQL 8 (lower_case_table_names=1, MySQL 8's SQL mode). */
export async function mariadbRecipe(): Promise<ImageRecipe> {
  return {
    repository: 'intercode-ts/sql-server',
    dockerfile: await readFile(source('Dockerfile'), 'utf8'),
    files: { 'intercode.cnf': await readFile(source('intercode.cnf')) },
    parent: 'base',
    typicalBuildSeconds: 30,
  };
}

/** The name a dump has in the build context: its position (load order) and its base name. */
export function dumpFileName(index: number, label: string): string {
  const safe = basename(label).replace(/[^A-Za-z0-9._-]/g, '_');
  return `${String(index).padStart(2, '0')}-${safe.endsWith('.sql') ? safe : `${safe}.sql`}`;
}

/**
 * The server image with `dumps` loaded at build time, in order. Its tag hashes the dumps'
 * contents, so changing a dump builds a new image and an unchanged set reuses the old one.
 */
export async function sqlDataRecipe(dumps: readonly SqlDump[]): Promise<ImageRecipe> {
  const files: Record<string, Buffer> = { 'load-dumps.sh': await readFile(source('load-dumps.sh')) };
  dumps.forEach((dump, i) => {
    files[`dumps/${dumpFileName(i, dump.label)}`] = dump.sql;
  });
  return {
    repository: SQL_DATA_REPOSITORY,
    dockerfile: await readFile(source('data.Dockerfile'), 'utf8'),
    files,
    parent: await mariadbRecipe(),
  };
}
