/** Where an episode root's folder is on this host, for tests that look at what a root leaves. */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Pools keep their roots under `<pool>/roots/<id>`, beside the engine's data root. */
const POOLS_BASE = '/var/lib/intercode-roots';

/** Root `id`'s folder (its `upper`, `work`, `init` and hostname file). @throws when no pool has it. */
export function rootFolderOf(id: string): string {
  const found = readdirSync(POOLS_BASE).map((pool) => join(POOLS_BASE, pool, 'roots', id)).find((dir) => existsSync(dir));
  if (!found) throw new Error(`no root folder for ${id} under ${POOLS_BASE}`);
  return found;
}
