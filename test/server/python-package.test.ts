/**
 * `clients/python` as a package: installed offline with Debian's pip and setuptools into a
 * fresh virtual environment (`python3 -m venv --system-site-packages`, then the command
 * docs/server.md gives), it plays a built-in bash task with its gold against `intercode
 * serve` to reward 1.0, and the README's Python snippet runs against the same server.
 * Before, the client was a file to copy, with no package to install.
 *
 * The package folder is copied to a temporary folder first and installed from there as
 * `./clients/python`: pip builds in the source folder, and the checkout must not gain a
 * build/ folder from a test. Under CI=true this runs (setup --with-test-tools installs
 * python3-venv, python3-pip, python3-setuptools and python3-websockets); elsewhere it skips
 * without them, saying why.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bashPlugin } from '../../envs/bash/plugin.js';
import { BUILTIN_BASH_TASKS } from '../../envs/bash/index.js';
import { loadDataset } from '../../src/datasets/index.js';
import { packagePath } from '../../src/package-path.js';
import { dockerTestFile, IN_CI, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { tempDir } from '../setup/temp-dirs.js';

const { engine } = await dockerTestFile();
const PYTHON = '/usr/bin/python3';

/** What is missing for an offline install into a virtual environment, or undefined. */
function missingPythonTools(): string | undefined {
  // pip is asked apart: importing it beside setuptools trips setuptools' distutils check.
  for (const args of [['-c', 'import ensurepip, venv, setuptools, websockets'], ['-m', 'pip', '--version']]) {
    const probe = spawnSync(PYTHON, args, { encoding: 'utf8' });
    if (probe.status !== 0) return `${PYTHON} ${args.join(' ')} failed (${probe.stderr.trim().split('\n').at(-1)}): apt-get install python3-venv python3-pip python3-setuptools python3-websockets`;
  }
  return undefined;
}
const missing = missingPythonTools();
if (missing && !IN_CI) console.warn(`skipping the Python package test: ${missing}`);

/** The README's ```python block. */
function readmeSnippet(): string {
  const block = /^```python\n([\s\S]*?)^```$/m.exec(readFileSync(packagePath('README.md'), 'utf8'));
  expect(block, 'README.md has a ```python block').not.toBeNull();
  return block![1]!;
}

describe.skipIf(skipWithoutEngine(engine, 'the Python package against serve') || (!!missing && !IN_CI))('the Python package, installed in a fresh virtual environment', () => {
  // Made in beforeAll, not while collecting: a skipped suite must leave no folder behind.
  let dir = '';
  let venvPython = '';
  let serve: ChildProcess | undefined;
  let url = '';

  beforeAll(async () => {
    requireEngine(engine);
    dir = tempDir('intercode-pypkg-');
    venvPython = join(dir, 'venv', 'bin', 'python');
    expect(missing, 'CI installs these with setup --with-test-tools').toBeUndefined();
    cpSync(packagePath('clients', 'python'), join(dir, 'clients', 'python'), { recursive: true, filter: (path) => !/(\/build|\.egg-info|__pycache__)$/.test(path) });
    const venv = spawnSync(PYTHON, ['-m', 'venv', '--system-site-packages', join(dir, 'venv')], { encoding: 'utf8' });
    expect(venv.status, venv.stderr).toBe(0);
    // The command docs/server.md and the README give, run where ./clients/python is the copy.
    const install = spawnSync(join(dir, 'venv', 'bin', 'pip'), ['install', '--no-build-isolation', '--no-index', './clients/python'], { cwd: dir, encoding: 'utf8', timeout: 180_000 });
    expect(install.status, `${install.stdout}\n${install.stderr}`).toBe(0);
    expect(install.stdout).toContain('Successfully installed intercode-client-0.1.0');

    serve = spawn(process.execPath, ['--import', 'tsx', packagePath('src', 'cli', 'main.ts'), 'serve', '--env', 'bash', '--port', '0', '--max-sessions', '2'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    serve.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    url = await new Promise<string>((resolve, reject) => {
      createInterface({ input: serve!.stdout! }).once('line', (line) => resolve((JSON.parse(line) as { url: string }).url));
      serve!.once('exit', (code) => reject(new Error(`serve exited with ${code} before it was ready: ${stderr}`)));
    });
  }, 600_000);

  afterAll(async () => {
    if (!serve || serve.exitCode !== null) return;
    const exited = new Promise((resolve) => serve!.once('exit', resolve));
    serve.kill('SIGTERM');
    await exited;
  });

  it('is the installed copy, typed, with its dependency met by Debian\'s websockets', () => {
    const run = spawnSync(venvPython, ['-c', 'import intercode_client, websockets, importlib.metadata as m, os; print(intercode_client.__file__); print(websockets.__version__); print(m.requires("intercode-client")); print(os.path.exists(os.path.join(os.path.dirname(intercode_client.__file__), "py.typed")))'], { cwd: dir, encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    const [file, version, requires, typed] = run.stdout.trim().split('\n');
    expect(file).toBe(join(dir, 'venv', 'lib', `python3.${/3\.(\d+)/.exec(spawnSync(PYTHON, ['--version'], { encoding: 'utf8' }).stdout)![1]}`, 'site-packages', 'intercode_client', '__init__.py'));
    expect(version).toMatch(/^\d+\.\d+/);
    expect(requires).toMatch(/^\['websockets ?\(?>=10\.4\)?'\]$/);
    expect(typed).toBe('True');
  });

  it('plays a built-in bash task with its gold against intercode serve: reward 1.0', async () => {
    const task = (await loadDataset(BUILTIN_BASH_TASKS))[0]!;
    const script = join(dir, 'play.py');
    writeFileSync(
      script,
      [
        'import asyncio, json, sys',
        'from intercode_client import IntercodeSession, StepResult',
        'async def main(url: str, actions: list) -> None:',
        '    async with IntercodeSession(url) as env:',
        '        first: StepResult = await env.reset(task_id=0)',
        '        last = first',
        '        for action in actions:',
        '            last = await env.step(action)',
        '        state = await env.state()',
        '        print(json.dumps({"query": first["observation"]["output"], "reward": last["reward"], "done": last["done"], "steps": state["step_count"]}))',
        'asyncio.run(main(sys.argv[1], json.loads(sys.argv[2])))',
      ].join('\n'),
    );
    const actions = bashPlugin.goldActions(task);
    const run = spawnSync(venvPython, [script, url, JSON.stringify(actions)], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
    expect(run.status, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { query: string; reward: number; done: boolean; steps: number };
    expect(result).toEqual({ query: expect.stringContaining(task.query), reward: 1, done: true, steps: actions.length });
  }, 180_000);

  it("runs the README's snippet (its URL pointed at this server)", () => {
    const snippet = readmeSnippet();
    expect(snippet.split('\n').filter((line) => line.trim()).length).toBeLessThanOrEqual(11);
    expect(snippet.match(/http:\/\/127\.0\.0\.1:8000/g)).toHaveLength(1);
    const script = join(dir, 'readme.py');
    writeFileSync(script, snippet.replace('http://127.0.0.1:8000', url));
    const run = spawnSync(venvPython, [script], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
    expect(run.status, run.stderr).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(lines.at(-1)).toMatch(/^(0|1|0\.\d+|1\.0) True$/);
  }, 180_000);
});
