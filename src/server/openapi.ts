import { SCHEMAS } from './protocol.js';

/**
 * The OpenAPI 3.1 document `GET /openapi.json` serves: every HTTP route `intercode serve`
 * answers, with the schemas `/schema` gives. `info.version` is the version of OpenEnv's HTTP
 * API the routes follow (OpenEnv's own server says 1.0.0; `openenv validate` reads its major
 * version as the standard profile), `x-intercode-version` the server's. `/ws` is a WebSocket
 * and OpenAPI cannot describe one (OpenEnv's document leaves it out too); it is named in
 * `x-websocket`. A test requests every path listed here and checks that each answers.
 */
export const OPENENV_HTTP_API_VERSION = '1.0.0';

const json = (schema: unknown) => ({ content: { 'application/json': { schema } } });
const object = { type: 'object' };
const refusal = { description: 'A refusal: {detail, code, retryable}', ...json({ type: 'object', properties: { detail: { type: 'string' }, code: { type: 'string' } }, required: ['detail', 'code'] }) };
const stepReply = { type: 'object', properties: { observation: object, reward: { type: ['number', 'null'] }, done: { type: 'boolean' } }, required: ['observation', 'reward', 'done'] };
const resetBody = {
  type: 'object',
  properties: { seed: { type: 'integer', minimum: 0 }, episode_id: { type: 'string', maxLength: 255 }, task_id: { type: 'integer', minimum: 0 } },
};

/** Extra paths beside the built-in ones: OpenAPI path items by path. */
export type PathItems = Record<string, Record<string, unknown>>;

export function openApiDocument(info: { title: string; description: string; version: string }, extra: PathItems = {}): Record<string, unknown> {
  const get = (summary: string, schema: unknown, tag = 'Environment Info') => ({ get: { summary, tags: [tag], responses: { 200: { description: 'OK', ...json(schema) } } } });
  return {
    openapi: '3.1.0',
    info: { title: info.title, description: info.description, version: OPENENV_HTTP_API_VERSION, 'x-intercode-version': info.version },
    'x-websocket': { '/ws': 'OpenEnv sessions: {"type": "reset" | "step" | "state" | "close" | "mcp", "data": ...}; see docs/server.md' },
    paths: {
      '/health': get('Health and sessions in use', { type: 'object', properties: { status: { const: 'healthy' }, active_sessions: { type: 'integer' }, max_sessions: { type: 'integer' } } }, 'Health'),
      '/metadata': get('Name, description and version of the environment', { type: 'object', properties: { name: { type: 'string' }, description: { type: 'string' }, version: { type: 'string' } } }),
      '/schema': get('JSON Schemas of the action, observation and state', { type: 'object', properties: SCHEMAS, required: ['action', 'observation', 'state'] }),
      '/state': get('The state of a fresh environment (stateless HTTP)', SCHEMAS.state, 'State Management'),
      '/reset': {
        post: {
          summary: 'Start an episode on an environment leased for this request alone, and return its first observation',
          tags: ['Environment Control'],
          requestBody: { required: false, ...json(resetBody) },
          responses: { 200: { description: 'OK', ...json(stepReply) }, 422: refusal, 503: refusal },
        },
      },
      '/step': {
        post: {
          summary: 'Reset (to task_id/seed if given) and run one action, on an environment leased for this request alone',
          tags: ['Environment Control'],
          requestBody: { required: true, ...json({ ...resetBody, properties: { ...resetBody.properties, action: SCHEMAS.action }, required: ['action'] }) },
          responses: { 200: { description: 'OK', ...json(stepReply) }, 422: refusal, 503: refusal },
        },
      },
      '/mcp': {
        post: {
          summary: 'MCP: streamable HTTP (initialize, then Mcp-Session-Id) or OpenEnv\'s JSON-RPC dialect (tools/list, tools/call, openenv/session/create|close)',
          tags: ['MCP'],
          requestBody: { required: true, ...json({ type: 'object', properties: { jsonrpc: { const: '2.0' }, method: { type: 'string' }, params: object, id: { type: ['string', 'integer', 'null'] } } }) },
          responses: { 200: { description: 'A JSON-RPC response (errors included)', ...json(object) }, 413: refusal },
        },
        delete: { summary: 'End a streamable-HTTP MCP session (Mcp-Session-Id)', tags: ['MCP'], responses: { 200: { description: 'OK' } } },
      },
      '/metrics': { get: { summary: 'Prometheus metrics (text format 0.0.4)', tags: ['Health'], responses: { 200: { description: 'OK', content: { 'text/plain': { schema: { type: 'string' } } } } } } },
      '/openapi.json': get('This document', object, 'Environment Info'),
      ...extra,
    },
  };
}
