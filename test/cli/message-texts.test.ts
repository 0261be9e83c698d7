/**
 * Small message texts a user reads: a task.toml syntax error names its line once; every flag
 * a `/metrics` HELP text names is a flag of `intercode serve`; the TensorFlow.js fallback,
 * the usual case where npm runs no install scripts, is logged as a calm note, not as a failure.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { readTaskDir } from '../../envs/task/index.js';
import { DatasetError } from '../../src/errors.js';
import type { EnvSlots } from '../../src/server/env-slots.js';
import { ServerMetrics } from '../../src/server/server-metrics.js';
import { describeBackend, selectBackend } from '../../training/scorer/backend.js';
import { tempDir } from '../setup/temp-dirs.js';

const dir = tempDir('ic-message-texts-');

describe('message texts', () => {
  it('a task.toml syntax error: the file and its line, said once', async () => {
    const task = join(dir, 'bad-toml');
    mkdirSync(task);
    writeFileSync(join(task, 'task.toml'), 'version = "1.0"\n\n[verifier]\ntimeout_sec = = 3\n');
    const error = await readTaskDir(task).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DatasetError);
    expect((error as Error).message).toMatch(new RegExp(`^${join(task, 'task.toml').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}, line 4: [^\\d]`));
    expect((error as Error).message).not.toMatch(/line 4: line 4/);
  });

  it('every flag a /metrics HELP text names is a flag of intercode serve', async () => {
    const { program } = (await import('../../src/cli/main.js')) as { program: Command };
    const serve = program.commands.find((c) => c.name() === 'serve')!;
    const flags = new Set(serve.options.map((o) => o.long));
    const slots = { envName: 'x', capacity: 1, inUse: 0, sandboxes: () => 0, poolCounts: () => undefined, sandboxLimit: undefined } as unknown as EnvSlots;
    const metrics = new ServerMetrics(() => ({ active: 0, max: 1, opened: 0, refused: 0, ended: { close: 0, drop: 0, idle: 0, shutdown: 0 } }), slots);
    const help = metrics.registry.text().split('\n').filter((line) => line.startsWith('# HELP'));
    expect(help.length).toBeGreaterThan(5);
    const named = help.flatMap((line) => [...line.matchAll(/--[a-z][a-z-]*/g)].map((m) => m[0]));
    expect(named).toContain('--max-sessions');
    for (const flag of named) expect(flags, flag).toContain(flag);
  });

  it('the tfjs fallback is a note: it says what runs, that it is usual, and what its loader said', async () => {
    const line = describeBackend({ name: 'wasm', fallbackReason: "Cannot find module 'tfjs_binding.node'" });
    expect(line).toMatch(/^note: training runs on tfjs's portable wasm backend/);
    expect(line).toContain('usual where npm runs no install scripts');
    expect(line).toContain("Its loader said: Cannot find module 'tfjs_binding.node'");
    expect(line).not.toMatch(/not loaded|error|fail/i);
    expect(describeBackend({ name: 'tensorflow' })).toBe('tfjs backend: tensorflow');
    // And what a train command logs on this machine is that line.
    const logged: string[] = [];
    const choice = await selectBackend((l) => logged.push(l));
    expect(logged).toEqual([describeBackend(choice)]);
  }, 60_000);
});
