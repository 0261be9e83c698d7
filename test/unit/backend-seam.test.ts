/**
 * The sandbox backends' seam, checked in the source: what the user sets for sandboxes
 * (`--runtime`, `--disk-limit`) travels as SandboxSettings, so no code below the CLI reads
 * (or writes) INTERCODE_RUNTIME or INTERCODE_DISK_LIMIT_MIB; and which backend a target
 * belongs to is asked of SANDBOX_BACKENDS, so the Kubernetes-or-Docker test
 * (isClusterTarget) stays inside the Kubernetes backend.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.(ts|mts|js|mjs)$/.test(name) ? [path] : [];
  });
}

const files = ['src', 'envs', 'training', 'bench'].flatMap((dir) => sources(join(ROOT, dir))).map((path) => ({ path: relative(ROOT, path), text: readFileSync(path, 'utf8') }));

describe('the backend seam', () => {
  it('no code below the CLI reads or writes INTERCODE_RUNTIME or INTERCODE_DISK_LIMIT_MIB', () => {
    const reads = /process\.env(\.|\[\s*['"])(INTERCODE_RUNTIME|INTERCODE_DISK_LIMIT_MIB)\b/;
    const found = files.filter((f) => !f.path.startsWith('src/cli/') && reads.test(f.text)).map((f) => f.path);
    expect(found).toEqual([]);
    // The CLI reads them once, as defaults of its flags, and writes them nowhere.
    expect(files.filter((f) => /process\.env\.(INTERCODE_RUNTIME|INTERCODE_DISK_LIMIT_MIB)\s*=[^=]/.test(f.text)).map((f) => f.path)).toEqual([]);
  });

  // The benches are left out: each measures one backend it names (`--engine docker|k8s`), the
  // chaos bench killing containers or pods as such.
  it('only the Kubernetes backend asks whether a target is a cluster', () => {
    const asking = files.filter((f) => !f.path.startsWith('bench/') && /\bisClusterTarget\b/.test(f.text)).map((f) => f.path);
    expect(asking.filter((path) => !path.startsWith('src/sandbox/kubernetes/') && path !== 'src/sandbox/backends/kubernetes-backend.ts')).toEqual([]);
  });
});
