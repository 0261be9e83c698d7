/** What the package entry exports of the envs (their classes, factories and rewards); importing it registers every env of envs/index.ts. */
export * from './index.js';
export * from './bash/index.js';
export * from './sql/index.js';
export { SharedServerBackend, PrivateServerBackend } from './sql/mariadb/backends.js';
export * from './ctf/index.js';
export * from './task/index.js';
export * from './python/index.js';
