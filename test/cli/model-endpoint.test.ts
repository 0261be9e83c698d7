/**
 * `eval` and `collect --policy llm:…` without an API key and without a base URL stop at once
 * with a usage error naming what is missing, before any sandbox or model request (they used
 * to build the env, then spend ~19 s on 7 retries against OpenAI's API, which refuses every
 * request without a key). DOCKER_HOST points nowhere: reaching Docker would fail differently.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { modelEndpoint } from '../../src/cli/model-flags.js';
import { ConfigError } from '../../src/errors.js';
import { packagePath } from '../../src/package-path.js';
import { tempDir } from '../setup/temp-dirs.js';

const dir = tempDir('intercode-model-endpoint-');

function runWithoutKey(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, DOCKER_HOST: `unix://${join(dir, 'no-engine.sock')}`, INTERCODE_DEBUG: '' };
  delete env.OPENAI_API_KEY;
  delete env.OPENAI_BASE_URL;
  const child = spawn(process.execPath, ['--import', 'tsx', packagePath('src', 'cli', 'main.ts'), ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stderr })));
}

describe('a model command without a key or base URL', () => {
  it.each([
    ['eval', ['eval', '--env', 'bash', '--out', join(dir, 'eval-run')]],
    ['collect --policy llm:', ['collect', '--env', 'bash', '--policy', 'llm:gpt-4o-mini', '--out', join(dir, 'rollouts.jsonl')]],
  ])('%s says so in one line and exits 2, before Docker is reached', async (_name, args) => {
    const { code, stderr } = await runWithoutKey(args);
    expect(code).toBe(2);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toContain('--api-key is missing, and so is --base-url');
    expect(stderr).toContain('OPENAI_API_KEY');
    expect(stderr).toContain('intercode mock-llm');
    expect(stderr).not.toMatch(/Docker engine|retr/i);
  }, 60_000);
});

describe('modelEndpoint', () => {
  it('takes a given base URL without a key (a local server)', () => {
    expect(modelEndpoint({ baseUrl: 'http://127.0.0.1:9/v1' }, {})).toEqual({ baseUrl: 'http://127.0.0.1:9/v1' });
    expect(modelEndpoint({}, { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' })).toEqual({ baseUrl: 'http://127.0.0.1:9/v1' });
  });
  it("takes a key for OpenAI's API", () => {
    expect(modelEndpoint({}, { OPENAI_API_KEY: 'k' })).toEqual({ baseUrl: 'https://api.openai.com/v1', apiKey: 'k' });
    expect(modelEndpoint({ apiKey: 'f' }, { OPENAI_API_KEY: 'k' })).toEqual({ baseUrl: 'https://api.openai.com/v1', apiKey: 'f' });
  });
  it('refuses neither, and empty variables count as unset', () => {
    expect(() => modelEndpoint({}, {})).toThrow(ConfigError);
    expect(() => modelEndpoint({}, { OPENAI_API_KEY: '', OPENAI_BASE_URL: '' })).toThrow(/--api-key is missing/);
  });
});
