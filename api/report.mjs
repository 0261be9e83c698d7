#!/usr/bin/env node
// The public API's report: one API Extractor report per subpath of package.json "exports"
// (api/<subpath>.api.md), read from the compiled declarations (dist/, `npm run build`).
// `node api/report.mjs` writes them; `--check` (CI, test/newcomer/api-report.test.ts) fails
// naming each report that differs from what is checked in, so a change of the surface is
// seen in review; `--json` prints how many names each subpath exports, and in all.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CompilerState, Extractor, ExtractorConfig } from '@microsoft/api-extractor';

const root = fileURLToPath(new URL('..', import.meta.url));
const args = new Set(process.argv.slice(2));
const check = args.has('--check');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

/** `./envs/sql/mariadb` → `envs-sql-mariadb`; `.` → `index`. */
const reportName = (subpath) => (subpath === '.' ? 'index' : subpath.slice(2).replaceAll('/', '-'));

const entries = Object.entries(pkg.exports)
  .filter(([, target]) => typeof target === 'object' && target.types)
  .map(([subpath, target]) => ({ subpath, name: reportName(subpath), types: join(root, target.types) }));
const missing = entries.filter((entry) => !existsSync(entry.types));
if (missing.length > 0) {
  process.stderr.write(`api: ${missing.map((entry) => entry.types).join(', ')} missing: run \`npm run build\` first\n`);
  process.exit(1);
}

function configFor(entry) {
  return ExtractorConfig.prepare({
    configObject: {
      projectFolder: root,
      mainEntryPointFilePath: entry.types,
      compiler: { tsconfigFilePath: join(root, 'tsconfig.json') },
      apiReport: { enabled: true, reportFolder: join(root, 'api'), reportTempFolder: join(root, 'dist', 'api-temp'), reportFileName: entry.name },
      docModel: { enabled: false },
      dtsRollup: { enabled: false },
      tsdocMetadata: { enabled: false },
      // The report is the point; what API Extractor would say of doc comments and of types
      // reachable but not exported is left out (it is written into the report as notes).
      messages: {
        compilerMessageReporting: { default: { logLevel: 'error' } },
        extractorMessageReporting: { default: { logLevel: 'none' } },
        tsdocMessageReporting: { default: { logLevel: 'none' } },
      },
    },
    configObjectFullPath: join(root, 'api', 'api-extractor.json'),
    packageJsonFullPath: join(root, 'package.json'),
  });
}

const configs = entries.map((entry) => ({ entry, config: configFor(entry) }));
// One TypeScript program for every entry (each report alone would build its own).
const compilerState = CompilerState.create(configs[0].config, { additionalEntryPoints: entries.map((entry) => entry.types) });
const changed = [];
const errors = [];
const counts = {};
for (const { entry, config } of configs) {
  const result = Extractor.invoke(config, {
    localBuild: !check,
    compilerState,
    messageCallback: (message) => {
      if (message.logLevel === 'error') errors.push(`${entry.subpath}: ${message.text}`);
      message.handled = true;
    },
  });
  if (result.apiReportChanged) changed.push(`api/${entry.name}.api.md`);
  counts[entry.subpath] = countExports(readFileSync(join(root, check ? join('dist', 'api-temp') : 'api', `${entry.name}.api.md`), 'utf8'));
}

/** The exported names of a report, and which of them are runtime values (not types or interfaces). */
function countExports(report) {
  const declarations = [...report.matchAll(/^export (?:declare )?(?:abstract )?(class|function|const|let|enum|namespace|interface|type) (\w+)/gm)];
  return { names: new Set(declarations.map((m) => m[2])), values: new Set(declarations.filter((m) => !['interface', 'type'].includes(m[1])).map((m) => m[2])) };
}

const union = (key) => new Set(Object.values(counts).flatMap((c) => [...c[key]])).size;
const sum = (key) => Object.values(counts).reduce((n, c) => n + c[key].size, 0);
const total = { names: sum('names'), values: sum('values'), distinctNames: union('names'), distinctValues: union('values') };
const bySubpath = Object.fromEntries(Object.entries(counts).map(([subpath, c]) => [subpath, { names: c.names.size, values: c.values.size }]));
if (args.has('--json')) process.stdout.write(`${JSON.stringify({ subpaths: bySubpath, total, changed, errors })}\n`);
else process.stderr.write(`api: ${entries.length} subpaths, ${total.names} exported names counting types (${total.distinctNames} distinct; ${total.values} runtime values, ${total.distinctValues} distinct)${check ? '' : ', reports written to api/'}\n`);
for (const error of errors) process.stderr.write(`api: ${error}\n`);
if (check && changed.length > 0) {
  process.stderr.write(`api: the public API changed: ${changed.join(', ')} differ from what the build declares; run \`npm run build && node api/report.mjs\` and commit the reports (review the change)\n`);
  process.exit(1);
}
process.exit(errors.length > 0 ? 1 : 0);
