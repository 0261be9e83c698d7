/** The server's one operation table (src/server/operations.ts): what every transport lists, checks and runs. */
import { describe, expect, it } from 'vitest';
import { envTools } from '../../src/server/env-tools.js';
import { checkedArguments, findOperation, inputSchema, offeredOperations, OPERATIONS, runOperation, ToolCallError, type OperationContext } from '../../src/server/operations.js';

describe('the operation table', () => {
  it('lists the episode operations, and the checkpoint extension only when asked for', () => {
    expect(offeredOperations().map((o) => o.name)).toEqual(['reset', 'execute', 'submit']);
    expect(offeredOperations({ checkpointTools: true }).map((o) => o.name)).toEqual(['reset', 'execute', 'submit', 'checkpoint', 'restore', 'release', 'fork']);
    // OpenEnv's tools/list is the table, entry by entry.
    expect(envTools('bash', { checkpointTools: true }).map((t) => [t.name, t.inputSchema])).toEqual(OPERATIONS.map((o) => [o.name, inputSchema(o)]));
    expect(inputSchema(findOperation('fork', { checkpointTools: true }))).toEqual({ type: 'object', properties: { n: { type: 'integer', minimum: 1, maximum: 64 } }, required: ['n'], additionalProperties: false, $schema: 'http://json-schema.org/draft-07/schema#' });
  });

  it('a name not offered is no operation, names every object has included', () => {
    for (const name of ['constructor', '__proto__', 'toString', 'nope', 'fork']) {
      expect(() => findOperation(name), name).toThrow(ToolCallError);
    }
    expect(() => findOperation('nope')).toThrow(/^no tool "nope"; the tools are reset, execute, submit$/);
  });

  it('checks arguments by the table: types, bounds, required ones, and no others', () => {
    const reset = findOperation('reset');
    expect(checkedArguments(reset, { task_id: 3, seed: null })).toEqual({ task_id: 3 });
    expect(() => checkedArguments(reset, { task_id: -1 })).toThrow('reset: task_id must be an integer ≥ 0');
    expect(() => checkedArguments(reset, { task_id: 1.5 })).toThrow('reset: task_id must be an integer ≥ 0');
    expect(() => checkedArguments(reset, { other: 1 })).toThrow('reset takes task_id, seed; got "other"');
    const fork = findOperation('fork', { checkpointTools: true });
    for (const n of [0, 65, '2', null, undefined]) expect(() => checkedArguments(fork, n === undefined ? {} : { n }), String(n)).toThrow('fork: n must be an integer 1–64');
    expect(() => checkedArguments(findOperation('restore', { checkpointTools: true }), { checkpoint_id: '' })).toThrow('restore: checkpoint_id must be a non-empty string');
    expect(() => checkedArguments(findOperation('execute'), {})).toThrow('execute: code must be a string');
    expect(() => checkedArguments(findOperation('checkpoint', { checkpointTools: true }), { x: 1 })).toThrow('checkpoint takes no arguments; got "x"');
  });

  it('runs nothing when the arguments are refused, and runs on the context it is given', async () => {
    const ran: string[] = [];
    const context: OperationContext = {
      onSession: async (work) => work({ step: async (data: { code: string }) => (ran.push(data.code), { observation: {}, reward: 0, done: false }) } as never),
      fork: async (n) => (ran.push(`fork ${n}`), { sessions: [] }),
    };
    await expect(runOperation(context, findOperation('execute'), { code: 7 })).rejects.toBeInstanceOf(ToolCallError);
    await runOperation(context, findOperation('submit'), { answer: 'flag' });
    await runOperation(context, findOperation('submit'), {});
    await runOperation(context, findOperation('fork', { checkpointTools: true }), { n: 2 });
    expect(ran).toEqual(['submit flag', 'submit', 'fork 2']);
  });
});
