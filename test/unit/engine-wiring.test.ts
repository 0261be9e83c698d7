/**
 * From `--engine` flags to the runtime an env's sandboxes come from, without Docker: every
 * env command takes the flag (repeatable, weighted); the flags become one EngineSet that
 * connects only when an env needs it; each env's CLI adapter hands that set to its factory
 * (seen through the unreachable endpoints the error names); the read-only SQL env refuses
 * several engines and the embedded one never connects.
 */
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { commandEngines, releaseEngines } from '../../src/cli/engine-flag.js';
import { ENV_PLUGINS } from '../../envs/index.js';
import { packagePath } from '../../src/package-path.js';
import { registerCollectCommand } from '../../src/cli/collect-command.js';
import { registerEvalCommand } from '../../src/cli/eval-command.js';
import { registerPlayCommand } from '../../src/cli/play-command.js';
import { registerReplayCommand } from '../../src/cli/replay-command.js';
import { registerRunCommand } from '../../src/cli/run-command.js';
import { registerTrainCommand } from '../../src/cli/train-command.js';
import { ConfigError, EngineUnreachableError } from '../../src/errors.js';
import { defaultEndpoint } from '../../src/sandbox/docker/engine.js';
import { EngineSet } from '../../src/sandbox/backends/engine-set.js';

const ENV_COMMANDS = ['run', 'play', 'replay', 'eval', 'collect', 'train'];
const NOWHERE_A = 'unix:///nonexistent/intercode-engine-a.sock';
const NOWHERE_B = 'unix:///nonexistent/intercode-engine-b.sock';
const quiet = () => undefined;

function program(): Command {
  const root = new Command();
  for (const register of [registerRunCommand, registerPlayCommand, registerReplayCommand, registerEvalCommand, registerCollectCommand, registerTrainCommand]) register(root);
  return root;
}

const unreachable = () =>
  new EngineSet([
    { endpoint: NOWHERE_A, weight: 1 },
    { endpoint: NOWHERE_B, weight: 2 },
  ]);

describe('--engine on every command that runs envs', () => {
  it.each(ENV_COMMANDS)('%s takes it repeated, with weights, into one engine set', (name) => {
    const command = program().commands.find((c) => c.name() === name)!;
    command.parseOptions(['--engine', 'unix:///run/docker-b.sock=2', '--engine', 'tcp://127.0.0.1:2375']);
    const engines = commandEngines(command.opts(), quiet);
    expect(engines.targets).toEqual([
      { endpoint: 'unix:///run/docker-b.sock', weight: 2 },
      { endpoint: 'tcp://127.0.0.1:2375', weight: 1 },
    ]);
    expect(engines.several).toBe(true);
  });

  it('without the flag, the default engine alone', () => {
    const command = program().commands.find((c) => c.name() === 'run')!;
    command.parseOptions([]);
    const engines = commandEngines(command.opts(), quiet);
    expect(engines.targets).toEqual([{ endpoint: defaultEndpoint(), weight: 1 }]);
    expect(engines.several).toBe(false);
  });

  it('refuses a bad value naming --engine', () => {
    expect(() => commandEngines({ engine: ['docker.example:2375'] }, quiet)).toThrow(ConfigError);
    expect(() => commandEngines({ engine: ['/a.sock=0'] }, quiet)).toThrow(/--engine.*weight must be a positive number/);
    expect(() => commandEngines({ engine: ['/a.sock', '/a.sock=2'] }, quiet)).toThrow(/--engine.*names \/a\.sock twice/);
  });
});

describe('EngineSet', () => {
  it('connects on first use, not when made, and names every engine when none answers', async () => {
    const engines = unreachable();
    expect(engines.status()).toBeUndefined();
    const error = await engines.runtime().then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(EngineUnreachableError);
    expect((error as EngineUnreachableError).details.endpoint).toBe(`${NOWHERE_A}, ${NOWHERE_B}`);
    engines.close();
  });

  it('with one engine, tries that engine', async () => {
    const engines = new EngineSet([{ endpoint: NOWHERE_A, weight: 1 }]);
    const error = await engines.runtime().then(() => undefined, (e: unknown) => e);
    expect((error as EngineUnreachableError).details.endpoint).toBe(NOWHERE_A);
  });

  it('refuses use after close()', async () => {
    const engines = unreachable();
    const lines: string[] = [];
    releaseEngines(engines, (line) => lines.push(line));
    expect(lines).toEqual([]); // never connected: nothing to report
    await expect(engines.runtime()).rejects.toThrow(/after close/);
  });
});

describe("each env's CLI adapter builds its envs on the command's engines", () => {
  it.each(ENV_PLUGINS.filter((c) => c.name !== 'sql').map((c) => [c.name, c] as const))('%s', async (_name, cli) => {
    // The task env needs task directories (checked before any engine is asked).
    const flags = cli.name === 'task' ? { data: packagePath('test', 'fixtures', 'harbor-tasks', 'own') } : {};
    const error = await cli.createEnvs(flags, 2, { purpose: 'run', log: quiet, engines: unreachable() }).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(EngineUnreachableError);
    expect((error as EngineUnreachableError).details.endpoint).toBe(`${NOWHERE_A}, ${NOWHERE_B}`);
  });

  const sql = ENV_PLUGINS.find((c) => c.name === 'sql')!;

  it('sql, read-only: refuses several engines (one server shared by every episode), before connecting', async () => {
    const made = sql.createEnvs({}, 2, { purpose: 'run', log: quiet, engines: unreachable() });
    await expect(made).rejects.toThrow(ConfigError);
    await expect(made).rejects.toThrow(/--engine.*names 2 engines.*one MariaDB server that every episode shares.*--writable/);
  });

  it('sql, writable: a server per session, so it goes to the engines', async () => {
    const error = await sql.createEnvs({ writable: true }, 2, { purpose: 'run', log: quiet, engines: unreachable() }).then(() => undefined, (e: unknown) => e);
    expect((error as EngineUnreachableError).details.endpoint).toBe(`${NOWHERE_A}, ${NOWHERE_B}`);
  });

  it('sql, embedded: no Docker, so the engines are never contacted', async () => {
    const envs = await sql.createEnvs({ embedded: true }, 2, { purpose: 'run', log: quiet, engines: unreachable() });
    expect(envs).toHaveLength(2);
    await Promise.all(envs.map((env) => env.close()));
  });
});
