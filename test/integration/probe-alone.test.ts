/**
 * The bash scorer reads an episode's files with every other process of the sandbox stopped
 * (FileProbe.whileAlone), in a real sandbox: processes the agent left running write nothing
 * while the probe reads — whatever they call themselves — and go on after it.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FileProbe } from '../../envs/bash/file-probe.js';
import { CONTROL_SHELL } from '../../src/pool/workspace-factory.js';
import { ShellSession } from '../../src/sandbox/shell/shell-session.js';
import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS, IDLE_PROCESS_NAME, type Sandbox, type SandboxRuntime } from '../../src/sandbox/types.js';
import { bashTestbedImage, probeEngine, removeTestContainers, requireEngine, skipWithoutEngine, startTestRun, testRuntime } from '../setup/docker.js';

const testRun = startTestRun();
const engine = await probeEngine();

afterAll(async () => {
  await removeTestContainers(engine.ok ? engine.docker : undefined, testRun);
});

/**
 * A background process, named `name`, that appends a byte to `file` every few milliseconds,
 * with builtins only (a child such as `sleep` would be stopped in its place).
 */
const ticker = (name: string, file: string) => `(exec -a ${name} bash -c 'while :; do printf x >> ${file}; for ((i = 0; i < 5000; i++)); do :; done; done' &); sleep 0.3`;

describe.skipIf(skipWithoutEngine(engine, 'probe tests'))('the scorer reads alone', () => {
  let runtime: SandboxRuntime;
  let image: string;
  const made: Sandbox[] = [];

  beforeAll(async () => {
    image = await bashTestbedImage(requireEngine(engine));
    runtime = testRuntime(requireEngine(engine));
  }, 300_000);

  afterEach(async () => {
    await Promise.all(made.splice(0).map((sandbox) => sandbox.destroy().catch(() => undefined)));
  });

  it.each([
    ['an ordinary name', 'ticker'],
    ["the idle process's name", IDLE_PROCESS_NAME],
  ])('a process the agent left running under %s writes nothing while the probe reads, and goes on after', async (_what, name) => {
    const sandbox = await runtime.create({ image, hostname: 'intercode', limits: DEFAULT_LIMITS, capabilities: DEFAULT_CAPABILITIES });
    made.push(sandbox);
    const agent = await ShellSession.open(sandbox);
    const control = await ShellSession.open(sandbox, CONTROL_SHELL);
    try {
      expect((await agent.run(`${ticker(name, '/root/ticks')}; echo started`)).output).toBe('started\n');
      const size = async () => Number((await control.run('wc -c < /root/ticks')).output.trim());
      const probe = FileProbe.of(control, sandbox);
      const [before, after] = await probe.whileAlone(async () => {
        const first = await size();
        await control.run('sleep 0.5');
        return [first, await size()];
      });
      expect(before, 'the ticker ran before the probe').toBeGreaterThan(0);
      expect(after, 'bytes written while the probe read').toBe(before);
      await control.run('sleep 0.3');
      expect(await size(), 'the ticker goes on after the probe').toBeGreaterThan(after!);
    } finally {
      agent.close();
      control.close();
    }
  }, 60_000);
});
