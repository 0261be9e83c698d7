/**
 * Regenerates the built-in CTF tasks (datasets/ctf/ic_ctf.json and task_assets/) with new
 * random flags: runs generate.py in a sandbox from the CTF image, which builds every task's
 * files, compiles the reversing task's program, and checks that each task's solution/solve.sh
 * prints its flag. Usage: npx tsx datasets/ctf/generator/generate.ts
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { extract } from 'tar-stream';
import { ctfRecipe, CTF_LIMITS } from '../../../envs/ctf/index.js';
import { ensureImage } from '../../../src/images/image-builder.js';
import { packEntries } from '../../../src/images/tar.js';
import { packagePath } from '../../../src/package-path.js';
import { DockerRuntime } from '../../../src/sandbox/docker/docker-sandbox.js';
import { connectEngine } from '../../../src/sandbox/docker/engine.js';
import { DEFAULT_CAPABILITIES } from '../../../src/sandbox/types.js';

const here = packagePath('datasets', 'ctf', 'generator');
const target = packagePath('datasets', 'ctf');

const docker = await connectEngine();
const image = await ensureImage(docker, await ctfRecipe(), (line) => console.error(line));
const sandbox = await new DockerRuntime(docker).create({ image, hostname: 'intercode', limits: CTF_LIMITS, capabilities: DEFAULT_CAPABILITIES });
try {
  const sources = ['generate.py', 'checker.c.in'];
  const files = await Promise.all(sources.map(async (name) => ({ name: `gen/${name}`, type: 'file' as const, mode: 0o644, content: await readFile(join(here, name)) })));
  await sandbox.putArchive(await packEntries([{ name: 'gen', type: 'directory', mode: 0o755 }, ...files]), '/');
  const run = await sandbox.exec(['python3', '/gen/generate.py', '/out'], { timeoutMs: 300_000 });
  process.stderr.write(run.output);
  if (run.exitCode !== 0) throw new Error(`generate.py failed (exit ${run.exitCode})`);
  const archive = await sandbox.getArchive('/out');
  await rm(join(target, 'task_assets'), { recursive: true, force: true });
  await unpack(archive, target);
  console.error(`wrote ${join(target, 'ic_ctf.json')} and ${join(target, 'task_assets')}`);
} finally {
  await sandbox.destroy();
}

/** Writes the archive's files (rooted at `out/`) under `dir`, keeping the executable bit. */
async function unpack(archive: Buffer, dir: string): Promise<void> {
  const reader = extract();
  const done = new Promise<void>((resolve, reject) => {
    reader.on('finish', resolve);
    reader.on('error', reject);
  });
  reader.on('entry', (header, stream, next) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: unknown) => chunks.push(chunk as Buffer));
    stream.on('end', () => {
      const relative = header.name.replace(/^out\/?/, '');
      if (header.type !== 'file' || relative === '') return next();
      const path = join(dir, relative);
      mkdir(dirname(path), { recursive: true })
        .then(() => writeFile(path, Buffer.concat(chunks), { mode: (header.mode ?? 0o644) & 0o111 ? 0o755 : 0o644 }))
        .then(() => next(), (error: Error) => next(error));
    });
  });
  reader.end(archive);
  await done;
}
