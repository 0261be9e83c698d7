import { randomFillSync } from 'node:crypto';

/** Bytes drawn from the system's CSPRNG at once: one call serves hundreds of tokens. */
const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let used = POOL_BYTES;

/**
 * `bytes` random bytes from the CSPRNG, as hex. Drawn from a pool refilled 4 KiB at a time:
 * a command's token and a session's nonce are asked for on every step, and one
 * `randomBytes` call per token cost more of this process's CPU than parsing the step's
 * marker (profiled). Each byte is handed out once.
 */
export function randomHex(bytes: number): string {
  if (bytes > POOL_BYTES) throw new RangeError(`randomHex: at most ${POOL_BYTES} bytes at once`);
  if (used + bytes > POOL_BYTES) {
    randomFillSync(pool);
    used = 0;
  }
  const hex = pool.toString('hex', used, used + bytes);
  used += bytes;
  return hex;
}
