/**
 * A run that holds live sandboxes, for test/integration/crash-recovery.test.ts:
 * `node --import tsx crash-recovery.child.ts <count> <image> <plain|handlers>` creates
 * `count` sandboxes with a shell in each, prints `ready <ids>` and waits to be killed.
 * With `handlers` it installs the shutdown handlers, so SIGINT/SIGTERM remove them first.
 * Containers carry the parent's test label (INTERCODE_TEST_RUN is inherited).
 */
import { connectEngine } from '../../src/sandbox/docker/engine.js';
import { DockerRuntime } from '../../src/sandbox/docker/docker-runtime.js';
import { installShutdownHandlers } from '../../src/sandbox/lifecycle/shutdown.js';
import { ShellSession } from '../../src/sandbox/shell/shell-session.js';
import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS } from '../../src/sandbox/types.js';

const [count, image, mode] = process.argv.slice(2);
if (mode === 'handlers') installShutdownHandlers({ timeoutMs: 60_000 });
const runtime = new DockerRuntime(await connectEngine());
const spec = { image: image!, hostname: 'intercode', limits: { ...DEFAULT_LIMITS, memoryBytes: 64 * 1024 * 1024 }, capabilities: DEFAULT_CAPABILITIES };
const sandboxes = await Promise.all(
  Array.from({ length: Number(count) }, async () => {
    const sandbox = await runtime.create(spec);
    await ShellSession.open(sandbox);
    return sandbox;
  }),
);
process.stdout.write(`ready ${sandboxes.map((s) => s.id).join(',')}\n`);
setInterval(() => undefined, 60_000);
