/**
 * `intercode serve --env python` as a process, with two clients: one sends an action that
 * writes a malformed frame (`\x1eIC<nonce> 5\nabcde`) onto its driver's stream to the host.
 * That client's episode ends truncated; the server process lives on and the other client's
 * session goes on to a scored submission (issue 26).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { dockerTestFile, skipWithoutEngine } from '../setup/docker.js';
import { TestClient } from '../server/helpers.js';
import { MALFORMED_FRAME_ACTION } from './hostile-python.js';

const { engine } = await dockerTestFile();
const MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

describe.skipIf(skipWithoutEngine(engine, 'serve --env python'))('intercode serve --env python against a malformed frame', () => {
  it('ends the sender\'s episode truncated; the process and the other session go on', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN, 'serve', '--env', 'python', '--port', '0', '--max-sessions', '2', '--spares', '0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    try {
      let stdout = '';
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout!.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
          const line = stdout.split('\n').find((l) => l.startsWith('{'));
          if (line) resolve((JSON.parse(line) as { url: string }).url);
        });
        void exit.then(({ code, signal }) => reject(new Error(`serve exited (${code ?? signal}) before ready: ${stderr}`)));
      });
      const [hostile, other] = [new TestClient(url), new TestClient(url)];
      await Promise.all([hostile.opened, other.opened]);
      for (const client of [hostile, other]) expect((await client.request({ type: 'reset', data: { task_id: 0 } })).type).toBe('observation');
      expect((await other.request({ type: 'step', data: { code: 'def helper(v):\n    return v' } })).type).toBe('observation');

      const forged = await hostile.request({ type: 'step', data: { code: MALFORMED_FRAME_ACTION } });
      expect(forged.type, JSON.stringify(forged.data)).toBe('observation');
      expect(forged.data).toMatchObject({ done: true, observation: { info: { truncated: true, truncation: { reason: 'sandbox-lost' } } } });

      const exited = await Promise.race([exit, new Promise((resolve) => setTimeout(() => resolve('alive'), 1_000))]);
      expect(exited, stderr).toBe('alive');
      // The other session still has its interpreter, and its episode scores.
      expect((await other.request({ type: 'step', data: { code: 'helper(21)' } })).data).toMatchObject({ observation: { output: '21\n' } });
      const end = await other.request({ type: 'step', data: { code: 'submit' } });
      expect(end.type).toBe('observation');
      expect(end.data).toMatchObject({ done: true });
      // The hostile client can start over.
      expect((await hostile.request({ type: 'reset', data: { task_id: 0 } })).type).toBe('observation');
      expect((await hostile.request({ type: 'step', data: { code: '1 + 1' } })).data).toMatchObject({ observation: { output: '2\n' } });
    } finally {
      child.kill('SIGTERM');
      await exit;
    }
  }, 300_000);
});
