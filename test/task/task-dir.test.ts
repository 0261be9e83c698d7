/** Reading Harbor task directories without Docker: TOML, both task.toml versions, sizes, refusals, reward files. */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dockerfileWorkdir, environmentImage, parseReward, parseToml, readTaskDirs, taskConfig } from '../../envs/task/index.js';
import { DatasetError, EpisodeUnscorableError, ImageError } from '../../src/errors.js';
import { DEBIAN_BOOKWORM } from '../../src/images/base-images.js';
import { writeTree } from '../setup/docker.js';
import { packagePath } from '../../src/package-path.js';

const FIXTURES = packagePath('test', 'fixtures', 'harbor-tasks');

describe('parseToml', () => {
  it('reads tables, dotted keys, strings, numbers, booleans, arrays, inline tables and arrays of tables', () => {
    const text = [
      'version = "1.0" # a comment',
      '[metadata]',
      "tags = ['a', \"b\",",
      '  "c"]',
      'n = 1_000',
      'x = 2.5e1',
      'ok = true',
      'desc = """',
      'two\\',
      '   lines"""',
      "path = 'C:\\raw'",
      '[verifier.env]',
      'A = "x\\ty"',
      'site."q.k" = { a = 1, b = "z" }',
      '[[step]]',
      'name = "one"',
      '[[step]]',
      'name = "two"',
    ].join('\n');
    expect(parseToml(text)).toEqual({
      version: '1.0',
      metadata: { tags: ['a', 'b', 'c'], n: 1000, x: 25, ok: true, desc: 'twolines', path: 'C:\\raw' },
      verifier: { env: { A: 'x\ty', site: { 'q.k': { a: 1, b: 'z' } } } },
      step: [{ name: 'one' }, { name: 'two' }],
    });
  });

  it('names the line of a syntax error and refuses a key defined twice', () => {
    expect(() => parseToml('a = 1\nb = \n')).toThrow(/line 2/);
    expect(() => parseToml('a = 1\na = 2\n')).toThrow(/defined twice/);
    expect(() => parseToml('a = "open\n')).toThrow(/new line in a string|unterminated/);
  });
});

describe('task.toml', () => {
  it('1.0 and 1.1: names, Harbor defaults, sizes in MiB or with units', () => {
    expect(taskConfig(parseToml('version = "1.0"\n[environment]\nmemory_mb = 2048\nstorage_mb = 10240\ncpus = 2\n'), 'f', 'folder')).toEqual({
      name: 'folder',
      verifier: { timeoutSec: 600, env: {} },
      agent: {},
      environment: { allowInternet: false, networkAskedBy: [], cpus: 2, memoryBytes: 2048 * 1024 ** 2, storageBytes: 10240 * 1024 ** 2 },
      ignoredKeys: [],
    });
    const v11 = taskConfig(parseToml('schema_version = "1.1"\n[task]\nname = "org/x"\n[verifier]\ntimeout_sec = 5\nuser = "nobody"\n[environment]\nmemory = "1G"\nallow_internet = true\n'), 'f', 'd');
    expect(v11).toMatchObject({ name: 'org/x', verifier: { timeoutSec: 5, user: 'nobody' }, environment: { memoryBytes: 1024 ** 3, allowInternet: true } });
  });

  it('a network asked for in any syntax: allow_internet, network_mode, [environment.network] mode, per phase', () => {
    const asks = (text: string) => taskConfig(parseToml(text), 'f', 'd').environment;
    expect(asks('[environment]\nallow_internet = true\n')).toMatchObject({ allowInternet: true, networkAskedBy: ['environment.allow_internet = true'] });
    expect(asks('schema_version = "1.1"\n[environment]\nnetwork_mode = "public"\n')).toMatchObject({ allowInternet: true, networkAskedBy: ['environment.network_mode = "public"'] });
    expect(asks('[environment.network]\nmode = "public"\n')).toMatchObject({ allowInternet: true, networkAskedBy: ['environment.network.mode = "public"'] });
    expect(asks('[environment]\nnetwork_mode = "bridge"\n').networkAskedBy).toEqual(['environment.network_mode = "bridge"']);
    expect(asks('[environment]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pypi.org"]\n').networkAskedBy).toEqual(['environment.network_mode = "allowlist" (allowed_hosts = ["pypi.org"])']);
    expect(asks('[agent]\nnetwork_mode = "public"\n').networkAskedBy).toEqual(['agent.network_mode = "public"']);
    expect(asks('[verifier]\nnetwork_mode = "public"\n').networkAskedBy).toEqual(['verifier.network_mode = "public"']);
    expect(asks('[verifier.environment]\nnetwork_mode = "public"\n').networkAskedBy).toEqual(['verifier.environment.network_mode = "public"']);
    expect(asks('[agent.network]\nmode = "allowlist"\nallowed_hosts = ["a.org"]\n').networkAskedBy).toEqual(['agent.network.mode = "allowlist" (allowed_hosts = ["a.org"])']);
    // No network: absent, "no-network", "none", false, an allowlist without hosts (Harbor: denies all egress).
    for (const none of ['', '[environment]\nallow_internet = false\n', '[environment]\nnetwork_mode = "no-network"\n', '[environment.network]\nmode = "none"\n', '[environment]\nnetwork_mode = "allowlist"\n', '[agent]\nnetwork_mode = "allowlist"\nallowed_hosts = []\n']) {
      expect(asks(none), none).toMatchObject({ allowInternet: false, networkAskedBy: [] });
    }
    expect(() => asks('[environment]\nnetwork_mode = 1\n')).toThrow(/"environment.network_mode": must be a network mode/);
    expect(() => asks('[environment]\nnetwork = "public"\n')).toThrow(/"environment.network": must be a table/);
    expect(() => asks('[environment]\nallow_internet = "yes"\n')).toThrow(/environment.allow_internet/);
  });

  it('lists the [environment] keys it does not read', () => {
    const config = taskConfig(parseToml('[environment]\ncpus = 1\ngpus = 1\ndocker_image = "x/y:z"\nnetwork_mode = "no-network"\n'), 'f', 'd');
    expect(config.ignoredKeys).toEqual(['environment.gpus', 'environment.docker_image']);
  });

  it('names the field at fault', () => {
    expect(() => taskConfig(parseToml('[verifier]\ntimeout_sec = -1\n'), 'f', 'd')).toThrow(/verifier.timeout_sec.*positive number/);
    expect(() => taskConfig(parseToml('[environment]\nmemory = "lots"\n'), 'f', 'd')).toThrow(/environment.memory/);
    expect(() => taskConfig(parseToml('[verifier.env]\nA = 1\n'), 'f', 'd')).toThrow(/"verifier.env.A": must be a string/);
    expect(() => taskConfig(parseToml('[verifier]\nuser = "a b"\n'), 'f', 'd')).toThrow(/verifier.user/);
  });

  it('reads a dataset folder, sorted, and refuses compose environments naming the file', async () => {
    expect((await readTaskDirs(join(FIXTURES, 'own'))).map((d) => d.config.name)).toEqual(['hello-txt', 'intercode-fixtures/sum-json']);
    expect((await readTaskDirs(join(FIXTURES, 'own', 'hello-txt'))).map((d) => d.config.name)).toEqual(['hello-txt']);
    const error = await readTaskDirs(join(FIXTURES, 'refused', 'compose')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DatasetError);
    expect((error as Error).message).toContain('docker-compose.yaml');
    await expect(readTaskDirs(join(FIXTURES, 'nope'))).rejects.toBeInstanceOf(DatasetError);
  });

  it('the shell starts in the last stage\'s last WORKDIR', () => {
    expect(dockerfileWorkdir('FROM a\nWORKDIR /x\nFROM b AS c\nWORKDIR /app\nWORKDIR src\n')).toBe('/app/src');
    expect(dockerfileWorkdir('FROM a\n')).toBe('/');
  });
});

describe('reward files', () => {
  it('reward.txt is one number; reward.json named numbers, the reward its "reward" or only member', () => {
    expect(parseReward('reward.txt', ' 0.5\n')).toEqual({ reward: 0.5, parts: { reward: 0.5 } });
    expect(parseReward('reward.json', '{"reward": 1, "style": 0.2}')).toEqual({ reward: 1, parts: { reward: 1, style: 0.2 } });
    expect(parseReward('reward.json', '{"score": 0.7}')).toEqual({ reward: 0.7, parts: { score: 0.7 } });
  });

  it('anything else is reward-invalid, never 0', () => {
    for (const [file, text] of [
      ['reward.txt', ''],
      ['reward.txt', 'passed'],
      ['reward.txt', 'NaN'],
      ['reward.json', '[1]'],
      ['reward.json', '{"a": 1, "b": 2}'],
      ['reward.json', '{"reward": "1"}'],
      ['reward.json', '{}'],
      ['reward.json', 'not json'],
    ] as const) {
      const error = (() => {
        try {
          parseReward(file, text);
        } catch (e) {
          return e;
        }
      })();
      expect(error, `${file} ${text}`).toBeInstanceOf(EpisodeUnscorableError);
      expect((error as EpisodeUnscorableError).reason).toBe('reward-invalid');
    }
  });
});

describe('environmentImage', () => {
  const roots: string[] = [];
  afterAll(() => Promise.all(roots.map((root) => rm(root, { recursive: true, force: true }))));
  const taskWith = async (dockerfile: string, extra: Record<string, string> = {}) => {
    const root = await writeTree({ 'task.toml': 'version = "1.0"\n', 'instruction.md': 'x', 'tests/test.sh': 'exit 0', 'environment/Dockerfile': dockerfile, ...extra }, 'intercode-task-');
    roots.push(root);
    return (await readTaskDirs(root))[0]!;
  };

  it('maps an offline base to ours, hashes the context, keeps the WORKDIR', async () => {
    const task = await taskWith('FROM debian:bookworm-slim\nWORKDIR /app\nCOPY a.txt /app/\n', { 'environment/a.txt': 'A' });
    const image = await environmentImage(task, async () => undefined);
    expect(image.recipe.parent).toBe(DEBIAN_BOOKWORM);
    expect(image.recipe.dockerfile).toBe('ARG BASE\nFROM ${BASE}\nWORKDIR /app\nCOPY a.txt /app/\n');
    expect(Object.keys(image.recipe.files)).toEqual(['a.txt']);
    expect(image.workdir).toBe('/app');
  });

  it('a base the engine lacks: IMAGE_MISSING naming the command that fetches it', async () => {
    const task = await taskWith('FROM python:3.13-slim\n');
    const error = await environmentImage(task, async () => undefined).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ImageError);
    expect((error as ImageError).code).toBe('IMAGE_MISSING');
    expect((error as ImageError).message).toContain('`docker pull python:3.13-slim`');
    const found = await environmentImage(task, async () => 'sha256:abc');
    expect(found.recipe.parent).toMatchObject({ tag: 'python:3.13-slim' });
  });

  it('refuses a USER other than root, naming the Dockerfile', async () => {
    const task = await taskWith('FROM debian:bookworm-slim\nUSER agent\n');
    await expect(environmentImage(task, async () => undefined)).rejects.toThrow(/Dockerfile.*sets USER agent/);
  });
});

describe('task images are shared by build context', () => {
  it('two tasks with the same environment/ get the same recipe tag; a changed file, another', async () => {
    const { recipeTag } = await import('../../src/images/recipe.js');
    const dirs = await readTaskDirs(join(FIXTURES, 'failing'));
    const tags = await Promise.all(dirs.map(async (d) => recipeTag((await environmentImage(d, async () => undefined)).recipe, 'parent-id')));
    expect(new Set(tags).size).toBe(1);
    const [hello, sum] = await readTaskDirs(join(FIXTURES, 'own'));
    const other = await Promise.all([hello!, sum!].map(async (d) => recipeTag((await environmentImage(d, async () => undefined)).recipe, 'parent-id')));
    expect(other[0]).toBe(tags[0]);
    expect(other[1]).not.toBe(tags[0]);
  });
});
