/**
 * `serve --env task --data DIR`: Harbor task directories played through the OpenEnv
 * protocol (/ws sessions), made by the task env's CLI adapter as `intercode serve` makes
 * them: each fixture's oracle scores 1, a wrong answer 0, and every slot is given back.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { taskPlugin } from '../../envs/task/plugin.js';
import { commandEngines, releaseEngines } from '../../src/cli/engine-flag.js';
import { packagePath } from '../../src/package-path.js';
import { EnvServer, pooledEnvSlots } from '../../src/server/index.js';
import { dockerTestFile, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { TestClient, until, startLoopbackServer } from '../server/helpers.js';

const { engine } = await dockerTestFile();
const log = (line: string) => console.log(line);
const DATA = join(packagePath('test', 'fixtures', 'harbor-tasks'), 'own');

describe.skipIf(skipWithoutEngine(engine, 'serve --env task'))('serve --env task', () => {
  const servers: EnvServer[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.close()));
  });

  it('plays task directories over /ws: oracle 1, wrong 0', async () => {
    requireEngine(engine);
    const engines = commandEngines({}, log);
    const envs = await taskPlugin.createEnvs({ data: DATA, keepWarm: '0' }, 2, { purpose: 'serve', log, engines });
    const slots = pooledEnvSlots('task', envs);
    await slots.ready();
    const server = await startLoopbackServer(slots, 'task', { log });
    servers.push(server);
    try {
      const client = new TestClient(server.url);
      await client.opened;
      for (const [taskId, task] of envs[0]!.tasks.entries()) {
        const reset = await client.request({ type: 'reset', data: { task_id: taskId } });
        expect(reset.type).toBe('observation');
        expect(JSON.stringify(reset.data)).toContain(JSON.stringify(task.query).slice(1, 40));
        let last = reset;
        for (const code of taskPlugin.goldActions(task)) {
          last = await client.request({ type: 'step', data: { code } });
          expect(last.type, JSON.stringify(last.data)).toBe('observation');
        }
        expect(last.data).toMatchObject({ reward: 1, done: true });
      }
      await client.request({ type: 'reset', data: { task_id: 0 } });
      await client.request({ type: 'step', data: { code: 'echo wrong > /app/hello.txt' } });
      expect((await client.request({ type: 'step', data: { code: 'submit' } })).data).toMatchObject({ reward: 0, done: true });
      client.send({ type: 'close' });
      await until(() => server.leases.active === 0 && slots.inUse === 0);
    } finally {
      await server.close();
      releaseEngines(engines, log);
    }
  }, 600_000);
});
