import type { Command } from 'commander';
import { ConfigError } from '../errors.js';
import { packageVersion } from './package-version.js';
import { windDownOnSignal } from '../sandbox/lifecycle/shutdown.js';
import { checkListening, EnvServer, pooledEnvSlots, reservePort, SERVER_DEFAULTS } from '../server/index.js';
import { openCommandEnvs, type CommandEnvs } from './command-scheduler.js';
import { addEnvFlags, selectEnvPlugin, type CommonEnvFlags } from './env-cli.js';
import { positiveInteger } from '../env/flag-values.js';
import { SESSION_SPARES } from '../vec/index.js';
import { ENV_PLUGINS } from '../../envs/index.js';

interface ServeFlags extends CommonEnvFlags {
  env: string;
  port: string;
  host: string;
  maxSessions: string;
  idleTimeout: string;
  token?: string;
  heartbeat: string;
  maxMessageBytes: string;
  spares?: string;
  checkpointTools?: boolean;
}

/** What warming makes: the spares (the rest on demand), as the log line says it. */
function describeWarming(maxSessions: number, spares: number | undefined): string {
  const ahead = spares ?? Math.min(SESSION_SPARES, maxSessions);
  return `${ahead} made ahead${maxSessions > ahead ? `; sessions past them get one made when they connect, up to ${maxSessions}` : ''}`;
}

/** `--idle-timeout`/`--heartbeat` seconds as milliseconds. @throws ConfigError naming the flag. */
function seconds(flag: string, value: string): number {
  const n = Number(value);
  if (!(n > 0) || !Number.isFinite(n)) throw new ConfigError(flag, `must be a positive number of seconds, got "${value}"`);
  return n * 1000;
}

/**
 * `intercode serve --env NAME`: the env behind OpenEnv's protocol (HTTP, `/ws` sessions)
 * and MCP (`/mcp`), sessions on the warm pool. Prints one JSON line when ready; SIGTERM or
 * Ctrl-C drains (sessions end, sandboxes are removed), a second one exits at once.
 */
export function registerServeCommand(program: Command): void {
  const command = program
    .command('serve')
    .description(
      'serve an env over OpenEnv\'s protocol (GET /health /schema /metadata /openapi.json, WebSocket /ws: one connection = one session, ' +
        'stateless POST /reset /step, GET /state), MCP (/mcp: streamable HTTP, or OpenEnv\'s JSON-RPC dialect) and Prometheus metrics (GET /metrics); ' +
        'prints {"url","env","maxSessions","tasks"} when ready',
    )
    .requiredOption('--env <name>', `environment: ${ENV_PLUGINS.map((c) => c.name).join(', ')}`)
    .option('--port <port>', 'TCP port (0: any free one)', String(SERVER_DEFAULTS.port))
    .option('--host <address>', 'address to listen on; anything but loopback requires --token', SERVER_DEFAULTS.host)
    .option(
      '--max-sessions <n>',
      'sessions at once (one sandbox each); the next connection gets CAPACITY_REACHED. Only --spares sandboxes are made ahead: a session past them gets one made when it connects (a cold reset, seconds), kept warm after it ends',
      '64',
    )
    .option('--idle-timeout <seconds>', 'a session with no request for this long is ended and its sandbox returned', String(SERVER_DEFAULTS.idleTimeoutMs / 1000))
    .option('--token <token>', 'bearer token required on every route but /health (default: $INTERCODE_SERVE_TOKEN; keeps it out of `ps`)')
    .option('--heartbeat <seconds>', 'WebSocket ping interval; a connection that answers neither of two pings is dropped', String(SERVER_DEFAULTS.heartbeatMs / 1000))
    .option('--max-message-bytes <n>', 'largest WebSocket message or request body accepted (at least 4096), and largest frame sent (an observation\'s output is cut to fit)', String(SERVER_DEFAULTS.maxMessageBytes))
    .option('--spares <n>', `sandboxes made ahead, before any session (pooled envs; default min(${SESSION_SPARES}, --max-sessions)); the port is bound first and answers 503 while they warm`)
    .option('--checkpoint-tools', 'also serve the tools checkpoint, restore, release and fork: standard MCP and OpenEnv\'s JSON-RPC on /mcp, OpenEnv\'s tool-calling step actions on /ws (the /ws messages of those names are always served)');
  addEnvFlags(command, ENV_PLUGINS).action(async (flags: ServeFlags, self: Command) => {
    const plugin = selectEnvPlugin(ENV_PLUGINS, '--env', flags.env, self);
    const port = Number(flags.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError('--port', `must be an integer 0–65535, got "${flags.port}"`);
    const maxSessions = positiveInteger('--max-sessions', flags.maxSessions);
    const idleTimeoutMs = seconds('--idle-timeout', flags.idleTimeout);
    const heartbeatMs = seconds('--heartbeat', flags.heartbeat);
    const maxMessageBytes = positiveInteger('--max-message-bytes', flags.maxMessageBytes);
    const spares = flags.spares === undefined ? undefined : Number(flags.spares);
    if (spares !== undefined && !(Number.isInteger(spares) && spares >= 0)) throw new ConfigError('--spares', `must be an integer ≥ 0, got "${flags.spares}"`);
    // An empty variable is no token (as an unset one), not a token too short.
    const token = flags.token ?? (process.env.INTERCODE_SERVE_TOKEN || undefined);
    checkListening(flags.host, token);
    const log = (line: string) => process.stderr.write(`${line}\n`);
    // Bound before images are checked and sandboxes warm (seconds to minutes): a port in use is said at once.
    const reserved = await reservePort(flags.host, port);
    let opened: CommandEnvs;
    try {
      opened = await openCommandEnvs(plugin, flags as ServeFlags & Record<string, unknown>, maxSessions, 'serve', log);
    } catch (error) {
      await reserved.release();
      throw error;
    }
    const { envs } = opened;
    const slots = pooledEnvSlots(plugin.name, envs, spares === undefined ? {} : { spares });
    const version = packageVersion();
    let server: EnvServer;
    try {
      log(`intercode serve: ${flags.host}:${reserved.port} held (503 until ready); warming the ${plugin.name} sandboxes (${describeWarming(maxSessions, spares)})`);
      await slots.ready();
      await reserved.release();
      server = await EnvServer.start({
        slots,
        agentFacts: plugin.agent,
        host: flags.host,
        port: reserved.port,
        ...(token ? { token } : {}),
        idleTimeoutMs,
        heartbeatMs,
        maxMessageBytes,
        ...(flags.checkpointTools ? { checkpointTools: true } : {}),
        metadata: {
          name: `intercode-${plugin.name}`,
          description: `InterCode ${plugin.name} tasks as an OpenEnv environment: the action is {"code": string}; "submit" ends the episode and scores it.`,
          version,
        },
        log,
      });
    } catch (error) {
      await reserved.release();
      await slots.close();
      opened.release();
      throw error;
    }
    const stopped = new Promise<void>((resolve) => {
      windDownOnSignal(() => {
        log('intercode serve: draining (sessions end, sandboxes are removed)');
        void server.close().then(resolve, resolve);
      });
    });
    process.stdout.write(`${JSON.stringify({ url: server.url, env: plugin.name, maxSessions, tasks: envs[0]!.tasks.length })}\n`);
    log(`intercode serve: ${plugin.name} at ${server.url} (WebSocket ${server.url.replace(/^http/, 'ws')}/ws, MCP ${server.url}/mcp), up to ${maxSessions} sessions`);
    await stopped;
    opened.release();
    const stats = server.leases.stats();
    log(`intercode serve: stopped after ${stats.opened} sessions (${Object.entries(stats.ended).map(([k, v]) => `${k} ${v}`).join(', ')})`);
  });
}
