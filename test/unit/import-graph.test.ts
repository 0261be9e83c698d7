/**
 * "Code depends only downward": the import graph of the project's TypeScript source (src/,
 * envs/, training/, bench/) has no circle of files, and no circle of rooms either. A room is a folder
 * directly under src/ (src/sandbox, src/cli, …) or a file there (src/errors.ts), and envs/,
 * training/ and bench/ are one room each: a circle of rooms is an import that climbs back up from
 * a lower layer to a higher one. Type-only imports count: they tie the files as much.
 * Read from the code's own `import … from`, `export … from` and `import('…')` with relative
 * paths; tests are not checked.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-path.js';

const ROOT = packagePath();
const CHECKED = ['src', 'envs', 'training', 'bench'];
const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^'";]*?\bfrom\s*['"](\.[^'"]+)['"]|\bimport\(\s*['"](\.[^'"]+)['"]\s*\)/g;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return entry === 'node_modules' ? [] : sourceFiles(path);
    return /\.(ts|mts)$/.test(entry) && !entry.endsWith('.d.ts') ? [relative(ROOT, path)] : [];
  });
}

/** Each file's relative imports, as project paths of .ts files. */
function importGraph(): Map<string, string[]> {
  const files = CHECKED.flatMap((dir) => sourceFiles(join(ROOT, dir)));
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(join(ROOT, file), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '');
    const targets = [...text.matchAll(IMPORT)].map((m) => relative(ROOT, resolve(ROOT, dirname(file), (m[1] ?? m[2])!)).replace(/\.js$/, '.ts'));
    graph.set(file, [...new Set(targets.filter((t) => known.has(t)))]);
  }
  return graph;
}

/** The room of a file: src/<first segment>, or envs, training or bench. */
const roomOf = (file: string) => (file.startsWith('src/') ? file.split('/').slice(0, 2).join('/') : file.split('/')[0]!);

/** Strongly connected components with more than one member (Tarjan), each sorted. */
function circles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    order.set(node, index);
    low.set(node, index++);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!order.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, order.get(next)!));
    }
    if (low.get(node) === order.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!order.has(node)) visit(node);
  return found;
}

describe('the import graph', () => {
  const graph = importGraph();

  it('is read: hundreds of files and their imports', () => {
    expect(graph.size).toBeGreaterThan(300);
    expect(graph.get('src/cli/main.ts')?.length).toBeGreaterThan(5);
  });

  it('has no circle of files', () => {
    expect(circles(graph)).toEqual([]);
  });

  it('has no circle of rooms: no import climbs back up a layer', () => {
    const rooms = new Map<string, string[]>();
    const witness = new Map<string, string>();
    for (const [file, targets] of graph) {
      const from = roomOf(file);
      for (const target of targets) {
        const to = roomOf(target);
        if (to === from) continue;
        rooms.set(from, [...new Set([...(rooms.get(from) ?? []), to])]);
        if (!witness.has(`${from}→${to}`)) witness.set(`${from}→${to}`, `${file} → ${target}`);
      }
    }
    const found = circles(rooms).map((component) => ({
      rooms: component,
      imports: [...witness].filter(([edge]) => component.some((a) => component.some((b) => a !== b && edge === `${a}→${b}`))).map(([, w]) => w),
    }));
    expect(found).toEqual([]);
  });

  it('the envs know nothing of the trainer, nor the library of either: envs/ imports no training/, src/ no bench/', () => {
    const reaching = (from: string, to: string) => [...graph].flatMap(([file, targets]) => (file.startsWith(from) ? targets.filter((t) => t.startsWith(to)).map((t) => `${file} → ${t}`) : []));
    expect(reaching('envs/', 'training/')).toEqual([]);
    expect(reaching('src/', 'bench/')).toEqual([]);
  });

  it('finds a circle where there is one (the checker itself)', () => {
    expect(circles(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]]))).toEqual([['a', 'b', 'c']]);
  });
});
