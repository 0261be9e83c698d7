#!/usr/bin/env node
// Benchmark launcher: `npm run bench -- <bench> [options]`, e.g. `npm run bench -- step --json`.
// Runs the compiled output (npm ci builds it through the "prepare" script) so the measured
// process is plain Node; see bench/index.ts. The first argument names the bench.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = new URL('../', import.meta.url);
const entry = new URL('dist/bench/index.js', root);
if (!existsSync(entry)) {
  process.stderr.write(
    existsSync(new URL('bench/index.ts', root))
      ? 'bench: dist/bench is missing; run `npm run build` (npm ci does it) first.\n'
      : 'bench: the benches are not part of the installed package: run them from a checkout of the repository (git clone, npm ci, npm run bench -- <name>).\n',
  );
  process.exit(1);
}

/** The first source file under `dir` newer than its compiled .js, if any. */
function staleSource(dir) {
  for (const item of readdirSync(new URL(dir, root), { withFileTypes: true })) {
    const path = `${dir}${item.name}`;
    if (item.isDirectory()) {
      const found = staleSource(`${path}/`);
      if (found) return found;
    } else if (item.name.endsWith('.ts') && !item.name.endsWith('.d.ts')) {
      const compiled = new URL(`dist/${path.replace(/\.ts$/, '.js')}`, root);
      if (!existsSync(compiled) || statSync(new URL(path, root)).mtimeMs > statSync(compiled).mtimeMs) return path;
    }
  }
  return undefined;
}

const stale = ['src/', 'envs/', 'bench/'].filter((dir) => existsSync(new URL(dir, root))).map(staleSource).find(Boolean);
if (stale) {
  process.stderr.write(`bench: warning: ${stale} is newer than dist/ (${fileURLToPath(root)}); run \`npm run build\` to measure current code.\n`);
}
const { runBenchCli } = await import(entry.href);
process.exitCode = await runBenchCli(process.argv.slice(2));
