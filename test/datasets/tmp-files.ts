import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A temporary folder for one test file; `write` returns the full path of the new file. */
export async function makeTempDir(): Promise<{
  dir: string;
  write: (name: string, content: string) => Promise<string>;
  remove: () => Promise<void>;
}> {
  const dir = await mkdtemp(join(tmpdir(), 'intercode-datasets-'));
  return {
    dir,
    write: async (name, content) => {
      const path = join(dir, name);
      await writeFile(path, content);
      return path;
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
