/**
 * "Nothing outside envs/ names an env": an env is one folder under envs/ plus one line in
 * envs/index.ts, so no other source file may know which envs exist.
 *
 * What counts, precisely. The env names are the folders of envs/ (each holds one env). The
 * files checked are the project's source outside envs/: src/, training/ and bin/ (.ts, .js,
 * .mjs); not bench/ (a benchmark measures a named env on purpose, as a test does).
 * Docs, datasets and tests are not checked. Comments are prose and are skipped. A file
 * names an env when one of its code lines
 * - imports from inside an env's folder (`envs/<name>/…`): only the list (envs/index.js),
 *   the contract (envs/plugin.js) and the library's face (envs/library.js) may be imported;
 * - holds an env id (`intercode/<name>-v1`);
 * - holds an env's name as a quoted string (`'sql'`), except in the uses listed in
 *   {@link SAME_WORD}, where the word means something else (the bash program, a fence tag).
 * - or two env names are keys of one object literal (`{ bash: …, sql: … }`, or one key
 *   per line at the same indentation with nothing shallower between): a name-keyed table.
 *   (One such key alone is a common word: `task: Task`, a WikiSQL `{ sql: … }`.)
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENV_PLUGINS } from '../../envs/index.js';
import { packagePath } from '../../src/package-path.js';

const ROOT = packagePath();
const CHECKED = ['src', 'training', 'bin'];

/** Uses of an env's name that mean another thing, each with its reason. */
const SAME_WORD: { file?: string; pattern: RegExp; why: string }[] = [
  { pattern: /\['bash'[,\]]/, why: 'the bash program run in a sandbox (an argv)' },
  { pattern: /CMD \["bash"\]/, why: "the image's default command, the bash program" },
  { file: 'src/agents/extract.ts', pattern: /'sql'|'python'|'bash'/, why: 'fence and language tags the action extractor reads' },
  { file: 'src/server/protocol.ts', pattern: /'task'/, why: "a JSON field named task in the wire schema" },
];

const envNames = () => readdirSync(join(ROOT, 'envs')).filter((entry) => statSync(join(ROOT, 'envs', entry)).isDirectory());

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.(ts|js|mjs)$/.test(entry) ? [path] : [];
  });
}

const isComment = (line: string) => /^\s*(\*|\/\*|\/\/)/.test(line);

/** Every `file:line: text` of the checked files that names one of `names`. */
export function envMentions(names: readonly string[]): string[] {
  const alternatives = names.join('|');
  const rules = [
    new RegExp(`envs/(?:${alternatives})/`),
    new RegExp(`intercode/(?:${alternatives})-v\\d`),
    new RegExp(`['"\`](?:${alternatives})['"\`]`),
  ];
  const key = new RegExp(`(?:^|[{,])\\s*(${alternatives})\\s*:(?!:)`, 'g');
  const found: string[] = [];
  for (const file of CHECKED.flatMap((dir) => sourceFiles(join(ROOT, dir)))) {
    const path = relative(ROOT, file);
    /** Env-name keys seen per indentation, while no shallower line has closed their object. */
    const keys = new Map<number, Map<string, string>>();
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (isComment(line)) return;
        if (line.trim() === '') return;
        const indent = line.length - line.trimStart().length;
        for (const depth of keys.keys()) if (depth > indent) keys.delete(depth);
        for (const m of line.matchAll(key)) {
          const table = keys.get(indent) ?? new Map<string, string>();
          table.set(m[1]!, `${path}:${i + 1}: ${line.trim()}`);
          keys.set(indent, table);
          if (table.size === 2) found.push(...table.values());
          else if (table.size > 2) found.push(table.get(m[1]!)!);
        }
        const [importRule, idRule, quotedRule] = rules as [RegExp, RegExp, RegExp];
        const imported = importRule.test(line) && !/envs\/(?:index|plugin|library)\.js/.test(line);
        const quoted = quotedRule.test(line) && !SAME_WORD.some((s) => (s.file === undefined || s.file === path) && s.pattern.test(line));
        if (imported || idRule.test(line) || quoted) found.push(`${path}:${i + 1}: ${line.trim()}`);
      });
  }
  return found;
}

describe('no file outside envs/ names an env', () => {
  it('the env names are the folders of envs/, and envs/index.ts lists each once', () => {
    expect(ENV_PLUGINS.map((p) => p.name).sort()).toEqual(envNames().sort());
  });

  it('finds no import into an env folder, env id or quoted env name in src/, training/ or bin/', () => {
    expect(envMentions(envNames())).toEqual([]);
  });

  it('would catch each kind of mention (the rules are not blind)', () => {
    const names = envNames();
    const alternatives = names.join('|');
    const quoted = new RegExp(`['"\`](?:${alternatives})['"\`]`);
    expect(quoted.test("if (envName !== 'python') return")).toBe(true);
    expect(new RegExp(`envs/(?:${alternatives})/`).test("import { x } from '../../envs/bash/index.js';")).toBe(true);
    const key = new RegExp(`(?:^|[{,])\\s*(${alternatives})\\s*:(?!:)`, 'g');
    expect([...'const T = { bash: BASH, sql: SQL };'.matchAll(key)].map((m) => m[1])).toEqual(['bash', 'sql']);
    expect(SAME_WORD.some((s) => s.file === undefined && s.pattern.test("exec(['bash', '-c', script])"))).toBe(true);
  });
});
