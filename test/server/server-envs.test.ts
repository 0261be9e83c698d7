/**
 * The server drives whatever env `--env` names through the same seam: the python, CTF and
 * SQL envs, made by their CLI adapters as `intercode serve` makes them, each solve their
 * first tasks with the gold over /ws, and give every slot back.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { commandEngines, releaseEngines } from '../../src/cli/engine-flag.js';
import { ENV_PLUGINS } from '../../envs/index.js';
import { EnvServer, pooledEnvSlots } from '../../src/server/index.js';
import { dockerTestFile, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { TestClient, until, startLoopbackServer } from './helpers.js';

const { engine } = await dockerTestFile();
const log = (line: string) => console.log(line);

describe.skipIf(skipWithoutEngine(engine, 'server over python, ctf and sql envs'))('server over the other envs', () => {
  const servers: EnvServer[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.close()));
  });

  for (const name of ['python', 'ctf', 'sql']) {
    it(`${name}: the first 3 tasks' golds score 1 over /ws`, async () => {
      requireEngine(engine);
      const cli = ENV_PLUGINS.find((c) => c.name === name)!;
      const engines = commandEngines({}, log);
      const envs = await cli.createEnvs({}, 2, { purpose: 'serve', log, engines });
      const slots = pooledEnvSlots(name, envs);
      await slots.ready();
      const server = await startLoopbackServer(slots, name, { log });
      servers.push(server);
      try {
        const client = new TestClient(server.url);
        await client.opened;
        for (let taskId = 0; taskId < 3; taskId++) {
          const reset = await client.request({ type: 'reset', data: { task_id: taskId } });
          expect(reset.type).toBe('observation');
          let last = reset;
          for (const code of cli.goldActions(envs[0]!.tasks[taskId]!)) {
            last = await client.request({ type: 'step', data: { code } });
            expect(last.type, JSON.stringify(last.data)).toBe('observation');
          }
          expect(last.data).toMatchObject({ reward: 1, done: true });
        }
        client.send({ type: 'close' });
        await until(() => server.leases.active === 0 && slots.inUse === 0);
      } finally {
        await server.close();
        releaseEngines(engines, log);
      }
    }, 600_000);
  }
});
