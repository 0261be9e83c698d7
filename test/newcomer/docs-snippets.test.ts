/**
 * Examples in the docs are code that compiles: every ```ts block of README.md and docs/ is
 * typechecked against the package's public entry (`import … from 'intercode-ts'`, resolved
 * through package.json's exports to the built declarations) with the project's compiler
 * options. Needs `npm run build` (npm ci does it).
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { docPages, ROOT } from './doc-pages.js';

// Inside the package, so `intercode-ts` resolves to this package by its own name.
const OUT = join(ROOT, 'test', 'newcomer', `.snippets-${process.pid}`);
afterAll(() => rmSync(OUT, { recursive: true, force: true }));

describe('TypeScript examples in the docs', () => {
  it('every ```ts block compiles', () => {
    mkdirSync(OUT, { recursive: true });
    const files = new Map<string, string>();
    for (const page of docPages()) {
      let n = 0;
      for (const match of readFileSync(page, 'utf8').matchAll(/^```ts\n([\s\S]*?)^```$/gm)) {
        const file = join(OUT, `${relative(ROOT, page).replace(/[/.]/g, '_')}_${++n}.ts`);
        writeFileSync(file, `${match[1]}\nexport {};\n`);
        files.set(file, `${relative(ROOT, page)} block ${n}`);
      }
    }
    expect(files.size).toBeGreaterThanOrEqual(2);
    const config = ts.getParsedCommandLineOfConfigFile(join(ROOT, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined })!;
    const program = ts.createProgram([...files.keys()], { ...config.options, noEmit: true, declaration: false });
    const problems = ts
      .getPreEmitDiagnostics(program)
      .filter((d) => d.file && files.has(resolve(d.file.fileName)))
      .map((d) => `${files.get(resolve(d.file!.fileName))}, line ${d.file!.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`);
    expect(problems).toEqual([]);
  }, 180_000);
});
