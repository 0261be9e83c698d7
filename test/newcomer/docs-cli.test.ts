/**
 * Nothing stale in the docs: every `intercode …` and `npm run bench -- …` written in
 * README.md or docs/ names a command, subcommand, bench and flags the CLI has (read from
 * the commander program and from each bench's --help); every command and flag of the CLI is
 * in docs/cli.md; every relative link between pages resolves, anchors included; the README
 * stays a guide (≤ 250 lines) that reaches the reproduction tables, the bench tables and the
 * security model in one click.
 */
import { readFileSync, existsSync } from 'node:fs';
import { Writable } from 'node:stream';
import { dirname, join, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import { beforeAll, describe, expect, it } from 'vitest';
import { BENCHES, runBenchCli } from '../../bench/index.js';
import { docPages, ROOT } from './doc-pages.js';


/** Inline code spans and lines of fenced code blocks, with `\|` (a pipe inside a table cell) unescaped. */
function codeSnippets(markdown: string): string[] {
  const snippets: string[] = [];
  const withoutFences = markdown.replace(/^(`{3,})[^\n]*\n([\s\S]*?)^\1\s*$/gm, (_, _fence: string, body: string) => {
    snippets.push(...body.split('\n'));
    return '';
  });
  for (const match of withoutFences.matchAll(/(?<!`)`([^`\n]+)`(?!`)/g)) snippets.push(match[1]!);
  return snippets.map((s) => s.replaceAll('\\|', '|'));
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2… */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  const body = markdown.replace(/^(`{3,})[^\n]*\n[\s\S]*?^\1\s*$/gm, '');
  for (const match of body.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = match[1]!.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

interface CliModel {
  /** Long flags per command path ("run", "images build"), --help included. */
  flags: Map<string, Set<string>>;
  /** Subcommands of commands that have them. */
  subcommands: Map<string, Set<string>>;
  benchFlags: Map<string, Set<string>>;
}

let cli: CliModel;

beforeAll(async () => {
  const { program } = (await import('../../src/cli/main.js')) as { program: Command };
  const flags = new Map<string, Set<string>>();
  const subcommands = new Map<string, Set<string>>();
  const visit = (command: Command, path: string[]) => {
    for (const sub of command.commands) {
      const subPath = [...path, sub.name()];
      flags.set(subPath.join(' '), new Set(['--help', ...sub.options.map((o) => o.long).filter((l): l is string => !!l)]));
      if (sub.commands.length > 0) subcommands.set(subPath.join(' '), new Set(sub.commands.map((c) => c.name())));
      visit(sub, subPath);
    }
  };
  visit(program, []);
  const benchFlags = new Map<string, Set<string>>();
  for (const name of BENCHES.keys()) {
    let help = '';
    const stdout = new Writable({ write: (chunk: Buffer, _e, done) => ((help += chunk.toString()), done()) });
    expect(await runBenchCli([name, '--help'], { stdout, stderr: stdout })).toBe(0);
    benchFlags.set(name, new Set(['--help', '--json', ...[...help.matchAll(/(?<![\w-])--[a-z][a-z0-9-]*/g)].map((m) => m[0])]));
  }
  cli = { flags, subcommands, benchFlags };
});

/** The flags written in a command line: `--name`, without values, brackets or ellipses. */
const flagsIn = (text: string) => [...text.matchAll(/(?<![\w-])--[a-z][a-z0-9-]*/g)].map((m) => m[0]);

/** Problems with one documented command line (empty when it matches the CLI). */
function check(snippet: string): string[] {
  const problems: string[] = [];
  const npmBench = /^npm run (?:-s )?bench(?: -- (.*))?$/.exec(snippet.trim());
  const intercode = /^(?:npx )?intercode(?: (.*))?$/.exec(snippet.trim());
  if (npmBench || /^intercode bench\b/.test(snippet.trim())) {
    const rest = (npmBench ? npmBench[1] : snippet.trim().replace(/^intercode bench ?/, '')) ?? '';
    const [first = '', ...more] = rest.split(/\s+/);
    const names = first.replace(/^<|>$/g, '').split('|').filter(Boolean);
    for (const name of names) if (!/^(name|bench)$/.test(name) && !cli.benchFlags.has(name) && !name.startsWith('-')) problems.push(`no bench "${name}"`);
    const known = names.filter((n) => cli.benchFlags.has(n));
    for (const flag of flagsIn(more.join(' '))) {
      if (known.length > 0 && !known.every((n) => cli.benchFlags.get(n)!.has(flag))) problems.push(`bench ${known.join('|')} has no ${flag}`);
    }
    return problems;
  }
  if (!intercode) return problems;
  const words = (intercode[1] ?? '').split(/\s+/).filter(Boolean);
  if (words.length === 0 || words[0]!.startsWith('-')) return problems;
  const commands = words[0]!.replace(/^<|>$/g, '').split('|');
  for (const name of commands) {
    if (name === 'cmd' || name === 'command') continue;
    if (!cli.flags.has(name)) {
      problems.push(`no command "${name}"`);
      continue;
    }
    let path = name;
    const subs = cli.subcommands.get(name);
    if (subs && words[1] && !words[1].startsWith('-') && !words[1].startsWith('[')) {
      if (!subs.has(words[1])) problems.push(`"${name}" has no subcommand "${words[1]}"`);
      else path = `${name} ${words[1]}`;
    }
    for (const flag of flagsIn(words.slice(1).join(' '))) {
      if (!cli.flags.get(path)!.has(flag)) problems.push(`"intercode ${path}" has no ${flag}`);
    }
  }
  return problems;
}

describe('docs match the CLI', () => {
  it('finds the documented command lines (the check reads something)', () => {
    const all = docPages().flatMap((page) => codeSnippets(readFileSync(page, 'utf8')));
    expect(all.filter((s) => /^(npx )?intercode /.test(s.trim())).length).toBeGreaterThan(60);
    expect(check('intercode run bash --no-such-flag')).toEqual(['"intercode run" has no --no-such-flag']);
    expect(check('intercode frobnicate')).toEqual(['no command "frobnicate"']);
    expect(check('intercode images nuke')).toEqual(['"images" has no subcommand "nuke"']);
    expect(check('npm run -s bench -- vec --no-such-flag --json')).toEqual(['bench vec has no --no-such-flag']);
    expect(check('intercode bench <step|vec|warp>')).toEqual(['no bench "warp"']);
  });

  it('every command, subcommand, bench and flag written in README.md and docs/ exists', () => {
    const problems: string[] = [];
    for (const page of docPages()) {
      for (const snippet of codeSnippets(readFileSync(page, 'utf8'))) {
        for (const problem of check(snippet)) problems.push(`${relative(ROOT, page)}: \`${snippet.trim()}\`: ${problem}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('a flag written alone (`--reset intercode`) is one of the CLI\'s, or another tool\'s named here', () => {
    // Flags of other programs the docs quote, with the program.
    const FOREIGN: Record<string, string> = {
      '--bridge': 'dockerd', '--iptables': 'dockerd', '--ip-masq': 'dockerd', '--network': 'docker run', '--variant': 'debootstrap',
      '--no-check-gpg': 'debootstrap', '--user': 'systemctl', '--short': 'git status', '--hard': 'git reset', '--no-preserve-root': 'rm',
      '--storage-opt': 'docker run', '--ulimit': 'docker run', '--storage-driver': 'dockerd', '--data-root': 'dockerd', '--security-opt': 'docker run',
      '--max-semi-space-size': 'node', '--cpu-prof': 'node', '--url': 'openenv validate', '--version': 'tar', '--xattrs': 'tar', '--overwrite': 'tar',
      '--system-site-packages': 'python3 -m venv', '--no-build-isolation': 'pip install', '--no-index': 'pip install',
    };
    const known = new Set([...cli.flags.values(), ...cli.benchFlags.values()].flatMap((set) => [...set]));
    const unknown: string[] = [];
    for (const page of docPages()) {
      for (const snippet of codeSnippets(readFileSync(page, 'utf8'))) {
        if (/^(npx )?intercode |^npm run/.test(snippet.trim())) continue;
        for (const flag of flagsIn(snippet)) if (!known.has(flag) && !FOREIGN[flag]) unknown.push(`${relative(ROOT, page)}: \`${snippet.trim()}\`: ${flag}`);
      }
    }
    expect(unknown).toEqual([]);
  });

  it('docs/cli.md names every command and every flag of the CLI', () => {
    const reference = readFileSync(join(ROOT, 'docs/cli.md'), 'utf8');
    const missing: string[] = [];
    for (const [path, flags] of cli.flags) {
      if (!reference.includes(`intercode ${path}`)) missing.push(`intercode ${path}`);
      for (const flag of flags) if (flag !== '--help' && !new RegExp(`${flag}(?![a-z0-9-])`).test(reference)) missing.push(`${path} ${flag}`);
    }
    for (const [bench, flags] of cli.benchFlags) {
      if (!reference.includes(`intercode bench ${bench}`)) missing.push(`intercode bench ${bench}`);
      for (const flag of flags) if (flag !== '--help' && !new RegExp(`${flag}(?![a-z0-9-])`).test(reference)) missing.push(`bench ${bench} ${flag}`);
    }
    expect(missing).toEqual([]);
  });
});

describe('links between pages', () => {
  it('every relative link resolves to a file, and every anchor to a heading there', () => {
    const broken: string[] = [];
    for (const page of docPages()) {
      const text = readFileSync(page, 'utf8').replace(/^(`{3,})[^\n]*\n[\s\S]*?^\1\s*$/gm, '');
      for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = match[1]!;
        if (/^[a-z]+:/.test(target)) continue;
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const file = path === '' ? page : resolve(dirname(page), path);
        if (!existsSync(file)) {
          broken.push(`${relative(ROOT, page)}: ${target} (no such file)`);
          continue;
        }
        if (anchor !== undefined && file.endsWith('.md') && !anchors(readFileSync(file, 'utf8')).has(anchor)) broken.push(`${relative(ROOT, page)}: ${target} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('anchors are GitHub\'s', () => {
    expect([...anchors("# A b\n## JSON output (`--json`: one object on stdout)\n## InterCode's episode lifecycle\n## A b\n")]).toEqual([
      'a-b',
      'json-output---json-one-object-on-stdout',
      'intercodes-episode-lifecycle',
      'a-b-1',
    ]);
  });
});

describe('the README guides', () => {
  const readme = () => readFileSync(join(ROOT, 'README.md'), 'utf8');

  it('is at most 250 lines and makes no "comes next" claims', () => {
    expect(readme().split('\n').length).toBeLessThanOrEqual(250);
    expect(readme()).not.toMatch(/come next|comes next|not yet built/i);
  });

  it('reaches the reproduction tables, the bench tables and the security model in one click', () => {
    const links = [...readme().matchAll(/\]\((docs\/[^)#\s]+)/g)].map((m) => m[1]);
    for (const [page, heading] of [
      ['docs/fidelity.md', /^\| file \| steps \|/m],
      ['docs/performance.md', /^\| envs \| workers \| trivial steps\/s/m],
      ['docs/security.md', /^## Sandbox limits/m],
    ] as const) {
      expect(links).toContain(page);
      expect(readFileSync(join(ROOT, page), 'utf8')).toMatch(heading);
    }
  });

  it('every headline figure names its source', () => {
    const table = readme().split('## Headline figures')[1]!.split('\n## ')[0]!;
    const rows = table.split('\n').filter((line) => line.startsWith('| ') && !line.startsWith('| what'));
    expect(rows.length).toBeGreaterThanOrEqual(8);
    for (const row of rows) expect(row, row).toMatch(/`(npx )?(npm run -s bench|intercode) [^`]+`.*\]\(docs\//);
  });
});
