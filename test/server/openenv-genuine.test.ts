/**
 * `intercode serve` over real bash sandboxes, driven by GENUINE client code (run in the
 * Debian trixie chroot of ../shared/clients, see test/setup/genuine-clients.ts):
 * - `openenv validate --url`'s runtime checks (OpenEnv's `validate_running_environment`) all pass;
 * - OpenEnv's `GenericEnvClient` plays tasks with OpenEnv's action `metadata`, and a field the
 *   schema does not admit is refused;
 * - OpenEnv's `MCPToolClient` lists and calls the tools in both its modes (step actions over
 *   /ws; OpenEnv's JSON-RPC dialect on /mcp) and solves a task;
 * - the official MCP Python SDK solves a task, and at capacity its caller sees why it was refused.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import type Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bashPlugin } from '../../envs/bash/plugin.js';
import type { BashEnv } from '../../envs/bash/bash-env.js';
import { createBashEnvs } from '../../envs/bash/index.js';
import { registerServeCommand } from '../../src/cli/serve-command.js';
import { EnvServer, pooledEnvSlots, SERVER_DEFAULTS } from '../../src/server/index.js';
import { dockerTestFile, IN_CI, requireEngine, skipWithoutEngine, testContainers } from '../setup/docker.js';
import { buildClientsChroot, genuineClientsMissing, runInClientsChroot } from '../setup/genuine-clients.js';
import { startLoopbackServer, until } from './helpers.js';

const { testRun, engine } = await dockerTestFile();
const SESSIONS = 3;
const SCRIPT = fileURLToPath(new URL('./fixtures/genuine_clients.py', import.meta.url));
const missing = genuineClientsMissing();
if (missing && IN_CI && !missing.includes('is absent')) throw new Error(`the genuine-client tests cannot run under CI: ${missing}`);
if (missing) console.warn(`skipping the genuine-client tests: ${missing}`);

describe.skipIf(skipWithoutEngine(engine, 'genuine clients against serve') || missing !== undefined)('genuine OpenEnv and MCP clients against serve (bash)', () => {
  let docker: Docker;
  let envs: BashEnv[];
  let server: EnvServer;
  const play = (scenario: string, arg: unknown = {}) => runInClientsChroot(SCRIPT, [server.url, scenario, JSON.stringify(arg)]);
  const gold = (task: number) => bashPlugin.goldActions(envs[0]!.tasks[task]!)[0]!;

  beforeAll(async () => {
    docker = requireEngine(engine);
    buildClientsChroot();
    envs = await createBashEnvs({}, SESSIONS);
    const slots = pooledEnvSlots('bash', envs, { spares: 1 });
    await slots.ready();
    server = await startLoopbackServer(slots, 'intercode-bash');
  }, 900_000);

  afterAll(async () => {
    await server?.close();
    if (docker) expect(await testContainers(docker, testRun, true)).toEqual([]);
  });

  it('openenv validate --url: every runtime criterion passes', async () => {
    const report = (await play('validate')) as { passed: boolean; mode: string; standard_profile: string; criteria: { id: string; passed: boolean; actual?: unknown }[] };
    console.log(`openenv validate: ${report.criteria.filter((c) => c.passed).length}/${report.criteria.length} (${report.criteria.map((c) => `${c.id} ${c.passed}`).join(', ')})`);
    expect(report.criteria.filter((c) => !c.passed)).toEqual([]);
    expect(report.criteria.map((c) => c.id).sort()).toEqual(['health_endpoint', 'mcp_endpoint', 'metadata_endpoint', 'mode_endpoint_consistency', 'openapi_version_available', 'schema_endpoint']);
    expect(report).toMatchObject({ passed: true, mode: 'simulation', standard_profile: 'openenv-http/1.x' });
  }, 120_000);

  it('GenericEnvClient plays tasks with action metadata (1.0 each) and gets a refusal for a field the schema lacks', async () => {
    const episodes = [0, 1].map((task_id) => ({ task_id, actions: bashPlugin.goldActions(envs[0]!.tasks[task_id]!) }));
    const result = (await play('generic', { episodes })) as { episodes: { task_id: number; first: string; reward: number; done: boolean }[]; unknown_field: string | null; state: { step_count: number } };
    expect(result.episodes.map((e) => [e.task_id, e.reward, e.done])).toEqual([[0, 1, true], [1, 1, true]]);
    expect(result.episodes[0]!.first).toBe(envs[0]!.tasks[0]!.query);
    expect(result.unknown_field).toMatch(/admits only "code", "metadata"; got "not_a_field" \(code: VALIDATION_ERROR\)/);
    await until(() => server.leases.active === 0);
  }, 180_000);

  it('openenv.yaml: the fields of OpenEnv\'s manifest, its port, and a serve command whose flags exist', async () => {
    const text = readFileSync(fileURLToPath(new URL('../../openenv.yaml', import.meta.url)), 'utf8');
    const manifest = (await play('manifest', { text })) as Record<string, unknown>;
    expect(manifest).toMatchObject({ spec_version: 1, name: 'intercode_env', type: 'space', port: SERVER_DEFAULTS.port });
    expect(typeof manifest.description).toBe('string');
    const args = String(manifest.app).split(' ');
    expect(args.slice(0, 3)).toEqual(['npx', 'intercode', 'serve']);
    const program = new Command();
    registerServeCommand(program);
    const serve = program.commands.find((c) => c.name() === 'serve')!;
    const flags = new Set(serve.options.map((o) => o.long));
    expect(args.filter((a) => a.startsWith('--')).filter((a) => !flags.has(a))).toEqual([]);
    expect(args[args.indexOf('--port') + 1]).toBe(String(manifest.port));
  }, 60_000);

  for (const mode of ['tools-ws', 'tools-http'] as const) {
    it(`MCPToolClient (${mode === 'tools-ws' ? 'default mode: step actions over /ws' : 'production mode: JSON-RPC on /mcp'}) lists the tools and solves a task`, async () => {
      const result = (await play(mode, { task_id: 0, gold: gold(0) })) as {
        tools: { name: string; input_schema: Record<string, unknown> }[];
        early: string;
        reset: { output: string; task_id: number };
        ran: { reward: number; done: boolean; exit_code: number };
        submitted: { reward: number; done: boolean };
        missing: string;
      };
      expect(result.tools.map((t) => t.name)).toEqual(['reset', 'execute', 'submit']);
      expect(result.tools[1]!.input_schema).toMatchObject({ properties: { code: { type: 'string' } }, required: ['code'] });
      expect(result.early).toMatch(/step before reset: send {"type": "reset"} first \(SESSION_ERROR\)/);
      expect(result.reset).toMatchObject({ output: envs[0]!.tasks[0]!.query, task_id: 0 });
      expect(result.ran).toMatchObject({ reward: 0, done: false, exit_code: 0 });
      expect(result.submitted).toMatchObject({ reward: 1, done: true });
      expect(result.missing).toMatch(/no tool "no_such_tool"/);
      await until(() => server.leases.active === 0);
    }, 180_000);
  }

  it('the official MCP Python SDK solves a task, and at capacity its caller sees the cause (CAPACITY_REACHED)', async () => {
    const result = (await play('mcp-sdk', { hold: SESSIONS, task_id: 1, gold: gold(1) })) as { tools: { name: string; input_schema: unknown }[]; reset: string[]; submitted: string[]; refusal: string | null };
    expect(result.reset[0]).toBe(envs[0]!.tasks[1]!.query);
    expect(JSON.parse(result.submitted[1]!)).toMatchObject({ reward: 1, done: true });
    console.log(`MCP SDK at capacity: ${result.refusal}`);
    expect(result.refusal).toMatch(new RegExp(`all ${SESSIONS} sessions are in use.*CAPACITY_REACHED`));
    // Standard MCP and OpenEnv's dialect list the same tools with the same input schemas.
    const openenv = (await play('tools-http', { task_id: 0, gold: gold(0) })) as { tools: { name: string; input_schema: unknown }[] };
    expect(openenv.tools).toEqual(result.tools);
    await until(() => server.leases.active === 0);
  }, 240_000);
});
