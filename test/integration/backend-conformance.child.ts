/**
 * A run that crashes holding a sandbox, for test/integration/backend-conformance.test.ts:
 * `node --import tsx backend-conformance.child.ts <endpoint> <image>` opens `endpoint`'s
 * backend, creates one sandbox, prints `ready <id>` and waits to be killed. The sandbox
 * carries the parent's test label (INTERCODE_TEST_RUN is inherited).
 */
import { EngineSet } from '../../src/sandbox/backends/engine-set.js';
import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS } from '../../src/sandbox/types.js';

const [endpoint, image] = process.argv.slice(2);
const engines = new EngineSet([{ endpoint: endpoint!, weight: 1 }]);
const sandbox = await (await engines.runtime()).create({ image: image!, hostname: 'intercode', limits: { ...DEFAULT_LIMITS, memoryBytes: 64 * 1024 * 1024 }, capabilities: DEFAULT_CAPABILITIES });
process.stdout.write(`ready ${sandbox.id}\n`);
setInterval(() => undefined, 60_000);
