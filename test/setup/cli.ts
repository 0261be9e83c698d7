/** Running the CLI from source (through tsx) in a child process, as a user would run it. */
import { spawn } from 'node:child_process';
import { packagePath } from '../../src/package-path.js';

/** What a CLI run gave back. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `intercode ...args` from source (`options.env`: variables added to this process's). @returns its exit code, stdout and stderr. */
export function intercodeFromSource(args: readonly string[], options: { env?: Record<string, string> } = {}): Promise<CliRun> {
  const child = spawn(process.execPath, ['--import', 'tsx', packagePath('src', 'cli', 'main.ts'), ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...options.env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

/** Runs `intercode ...args` from source with `input` on its stdin (then closed). @returns as {@link intercodeFromSource}. */
export function intercodeWithStdin(args: readonly string[], input: string): Promise<CliRun> {
  const child = spawn(process.execPath, ['--import', 'tsx', packagePath('src', 'cli', 'main.ts'), ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(input);
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}
