#!/usr/bin/env node
// The CLI runs from the compiled output (npm ci builds it through the "prepare" script).
import { existsSync } from 'node:fs';
const entry = new URL('../dist/src/cli/main.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('intercode: dist/ is missing; run `npm run build` (npm ci does it) first.\n');
  process.exit(1);
}
const { runCli } = await import(entry.href);
await runCli(process.argv);
